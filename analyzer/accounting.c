/* The whole run accounted for, per process: wall time cut into categories that add up to it (docs/findings.md). */
#include "accounting.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "intervals.h"
#include "process_time.h"
#include "sort.h"
#include "v3_format.h"

static int load_ivls(sqlite3 *db, const char *sql, int32_t pid, ivl_list *l, ivl_list *tokens) {
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) return 0; /* a table this trace lacks */
    sqlite3_bind_int(st, 1, pid);
    int rc = 0;
    while (rc == 0 && sqlite3_step(st) == SQLITE_ROW) {
        rc = ivl_push(l, sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1));
        if (rc == 0 && tokens) rc = ivl_push(tokens, sqlite3_column_int64(st, 2), 0);
    }
    sqlite3_finalize(st);
    return rc;
}

static int64_t scalar_pid(sqlite3 *db, const char *sql, int32_t pid, int64_t dflt, int *found) {
    sqlite3_stmt *st = NULL;
    int64_t       v  = dflt;
    if (found) *found = 0;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_int(st, 1, pid);
        if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL) {
            v = sqlite3_column_int64(st, 0);
            if (found) *found = 1;
        }
    }
    sqlite3_finalize(st);
    return v;
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

/* llama.cpp's own "load time" and "total time" (common_perf_print), computed as llama_context computes them from
 * the engine's spans (regions of depth -1): its start is the last llama_perf_context_reset before the call that
 * reads it, else the start of the last model load before it (the model's t_start_us); load time ends with the first
 * llama_decode that had tokens, total time with the last llama_perf_context call. b: batches in start order, btok
 * their tokens; ld: the model loads, merged. -1: none. */
static int llama_counters(sqlite3 *db, ggprof_acc_proc *p, const ivl_list *b, const ivl_list *btok, const ivl_list *ld) {
    p->llama_load_ns = p->llama_total_ns = -1;
    ivl_list rs = { 0 }, pc = { 0 };
    if (load_ivls(db, "SELECT start_ns, duration_ns FROM regions WHERE pid = ?1 AND depth = -1 AND name ="
                      " 'llama_perf_context_reset' ORDER BY start_ns", p->pid, &rs, NULL) != 0 ||
        load_ivls(db, "SELECT start_ns, duration_ns FROM regions WHERE pid = ?1 AND depth = -1 AND name ="
                      " 'llama_perf_context' ORDER BY start_ns", p->pid, &pc, NULL) != 0) {
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

/* What ggprof_accounting_slices lays the categories on: the merged lists account() cut them from, and where the
 * set-up calls (t_use) and the work (t_work) begin. */
struct ggprof_acc_ivls {
    ivl_list g, u, idle, ld, setup;
    int64_t  t_use, t_work;
};

/* Moves the lists into p (they are left empty). */
static int keep_ivls(ggprof_acc_proc *p, ivl_list *g, ivl_list *u, ivl_list *idle, ivl_list *ld, ivl_list *setup,
                     int64_t t_use, int64_t t_work) {
    struct ggprof_acc_ivls *k = calloc(1, sizeof(*k));
    if (!k) return -1;
    k->g = *g, k->u = *u, k->idle = *idle, k->ld = *ld, k->setup = *setup;
    k->t_use = t_use, k->t_work = t_work;
    memset(g, 0, sizeof(*g)), memset(u, 0, sizeof(*u)), memset(idle, 0, sizeof(*idle));
    memset(ld, 0, sizeof(*ld)), memset(setup, 0, sizeof(*setup));
    p->ivls = k;
    return 0;
}

static void ivls_free(struct ggprof_acc_ivls *k) {
    if (!k) return;
    free(k->g.v), free(k->u.v), free(k->idle.v), free(k->ld.v), free(k->setup.v);
    free(k);
}

static int account(sqlite3 *db, ggprof_acc_proc *p) {
    int32_t pid = p->pid;
    int     has;
    /* Each table on its own: an older trace may lack one. */
    static const char *const k_first[] = {
        "SELECT min(start_ns) FROM events WHERE pid = ?1", "SELECT min(start_ns) FROM graph_list WHERE pid = ?1",
        "SELECT min(start_ns) FROM batches WHERE pid = ?1",
        "SELECT min(alloc_ns) FROM buffer_list WHERE pid = ?1 AND alloc_ns > 0" };
    static const char *const k_last[] = {
        "SELECT max(start_ns + duration_ns) FROM events WHERE pid = ?1",
        "SELECT max(start_ns + duration_ns) FROM graph_list WHERE pid = ?1",
        "SELECT max(start_ns + duration_ns) FROM batches WHERE pid = ?1" };
    int64_t first = INT64_MAX, last = INT64_MIN;
    for (size_t i = 0; i < sizeof(k_first) / sizeof(k_first[0]); i++) {
        int64_t v = scalar_pid(db, k_first[i], pid, 0, &has);
        if (has && v < first) first = v;
    }
    for (size_t i = 0; i < sizeof(k_last) / sizeof(k_last[0]); i++) {
        int64_t v = scalar_pid(db, k_last[i], pid, 0, &has);
        if (has && v > last) last = v;
    }
    if (first == INT64_MAX) first = 0;
    if (last == INT64_MIN) last = first;
    p->first_use_ns = first;
    /* The wall: fork to exit as record measured them (process_time.c), else the engine's start of the process, else
     * the first record; to the exit, else the last record. */
    ggprof_process_times pt;
    if (ggprof_accounting_times(db, pid, &pt) != 0) return -1;
    p->minflt = pt.has ? pt.minflt : -1, p->majflt = pt.has ? pt.majflt : -1;
    for (size_t i = 0; i < pt.n_buffers; i++) p->weights_bytes = sat_add(p->weights_bytes, pt.buffers[i].size);
    p->n_weights = (int64_t) pt.n_buffers;
    int64_t pstart = scalar_pid(db, "SELECT start_ns FROM processes WHERE pid = ?1 AND start_ns > 0", pid, 0, &has);
    p->start_ns = first;
    if (pt.has && pt.fork_ns > 0 && pt.fork_ns <= first) p->start_ns = pt.fork_ns, p->start_known = 1;
    else if (has && pstart < first) p->start_ns = pstart, p->start_known = 1;
    p->end_ns = last > p->start_ns ? last : p->start_ns;
    if (pt.has && pt.exit_ns >= p->end_ns) p->end_ns = pt.exit_ns, p->exit_known = 1;
    ggprof_process_times_free(&pt);
    p->wall_ns = pos(sat_sub(p->end_ns, p->start_ns));
    /* The thread whose blocked time is idle: the one calling llama_decode, else the one recording the most. */
    p->tid = (int) scalar_pid(db, "SELECT tid FROM batches WHERE pid = ?1 GROUP BY tid ORDER BY sum(duration_ns) DESC,"
                                  " tid LIMIT 1", pid, 0, &has);
    if (!has) {
        p->tid = (int) scalar_pid(db, "SELECT tid FROM events WHERE pid = ?1 GROUP BY tid ORDER BY count(*) DESC, tid"
                                      " LIMIT 1", pid, pid, NULL);
    }

    /* Graphs: the graph list, else each graph's span of records (a JSON profile). */
    ivl_list g = { 0 }, b = { 0 }, btok = { 0 }, bout = { 0 }, u = { 0 }, idle = { 0 }, busy_idle = { 0 }, ld = { 0 },
             setup = { 0 };
    int      rc = load_ivls(db, "SELECT start_ns, duration_ns FROM graph_list WHERE pid = ?1", pid, &g, NULL);
    if (rc == 0 && g.n == 0) {
        rc = load_ivls(db, "SELECT min(start_ns), max(start_ns + duration_ns) - min(start_ns) FROM events"
                           " WHERE pid = ?1 AND graph_id >= 0 GROUP BY sched_id, graph_id", pid, &g, NULL);
    }
    if (rc == 0) {
        rc = load_ivls(db, "SELECT start_ns, duration_ns, n_tokens FROM batches WHERE pid = ?1 ORDER BY start_ns, batch_id",
                       pid, &b, &btok);
    }
    if (rc == 0) {
        rc = load_ivls(db, "SELECT start_ns, duration_ns, n_outputs FROM batches WHERE pid = ?1 ORDER BY start_ns,"
                           " batch_id", pid, &u, &bout);
    }
    if (rc == 0) {
        sqlite3_stmt *st = NULL;
        if (sqlite3_prepare_v2(db, "SELECT start_ns, end_ns - start_ns FROM thread_idle WHERE pid = ?1 AND tid = ?2",
                               -1, &st, NULL) == SQLITE_OK) {
            sqlite3_bind_int(st, 1, pid);
            sqlite3_bind_int(st, 2, p->tid);
            while (rc == 0 && sqlite3_step(st) == SQLITE_ROW) {
                rc = ivl_push(&busy_idle, sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1));
            }
        }
        sqlite3_finalize(st);
    }
    for (size_t i = 0; rc == 0 && i < g.n; i++) rc = ivl_push(&u, g.v[i].a, sat_sub(g.v[i].b, g.v[i].a));
    if (rc != 0) goto fail;
    p->n_graphs  = (int64_t) g.n;
    p->graphs_ns = ivl_merge(&g);
    if (g.n) p->first_graph_ns = g.v[0].a, p->last_graph_end_ns = g.v[g.n - 1].b;
    int64_t gen_a = INT64_MAX, gen_b = INT64_MIN;
    for (size_t i = 0; i < b.n; i++) {
        int64_t d = sat_sub(b.v[i].b, b.v[i].a);
        p->batch_ns = sat_add(p->batch_ns, d);
        if (btok.v[i].a > 1) {
            p->prompt_ns = sat_add(p->prompt_ns, d), p->n_prompt_batches++;
            p->n_prompt_tokens = sat_add(p->n_prompt_tokens, btok.v[i].a);
        } else {
            p->generation_ns = sat_add(p->generation_ns, d), p->n_gen_batches++;
            if (b.v[i].a < gen_a) gen_a = b.v[i].a;
            if (b.v[i].b > gen_b) gen_b = b.v[i].b;
        }
        if (!p->first_token_ns && bout.v[i].a > 0) p->first_token_ns = b.v[i].b;
    }
    /* u: every graph and llama_decode call; idle: the thread blocked outside them (a blocked llama_decode is
     * waiting for its device: compute or graph build, not idle). */
    int64_t in_u = ivl_merge(&u);
    ivl_merge(&busy_idle);
    if (ivl_minus(&busy_idle, &u, &idle) != 0) goto fail;
    ivl_merge(&idle);
    p->graph_build_ns = pos(sat_sub(in_u, p->graphs_ns));
    p->copies_ns = scalar_pid(db, "SELECT CAST(total(duration_ns) AS INTEGER) FROM events WHERE pid = ?1 AND type = 1"
                                  " AND duration_ns > 0", pid, 0, NULL);
    if (g.n) p->startup_ns = pos(sat_sub(p->first_graph_ns, p->start_ns));

    /* The run's stretches: start-up, loading, context set-up, then the work (from the first llama_decode or graph).
     * Measured where the engine timed llama.cpp's set-up calls (engine/llama.c: regions of depth -1): start-up to
     * the first of them, loading the model-load calls, context set-up the context-creation calls, and the program's
     * own code between them host gaps; else inferred: start-up to ggml's first use, loading to the context's first
     * buffer (its KV cache or compute buffer), context set-up to the work. */
    if (load_ivls(db, "SELECT start_ns, duration_ns FROM regions WHERE pid = ?1 AND depth = -1 AND name IN"
                      " ('llama_model_load_from_file', 'llama_load_model_from_file', 'llama_model_load_from_splits')",
                  pid, &ld, NULL) != 0 ||
        load_ivls(db, "SELECT start_ns, duration_ns FROM regions WHERE pid = ?1 AND depth = -1 AND name IN"
                      " ('llama_init_from_model', 'llama_new_context_with_model')", pid, &setup, NULL) != 0)
        goto fail;
    for (size_t i = 0; i < ld.n; i++) {
        if (ivl_push(&setup, ld.v[i].a, sat_sub(ld.v[i].b, ld.v[i].a)) != 0) goto fail;
    }
    ivl_merge(&ld);
    ivl_merge(&setup);
    int64_t t_use, t_work, pre_gaps = 0;
    if (setup.n) {
        p->setup_measured = 1;
        t_use  = clamp(setup.v[0].a, p->start_ns, p->end_ns);
        t_work = u.n ? clamp(u.v[0].a, t_use, p->end_ns) : p->end_ns;
        int64_t in_setup = ivl_covered(&setup, t_use, t_work);
        p->loading_ns    = ivl_covered(&ld, t_use, t_work);
        p->context_ns    = pos(sat_sub(in_setup, p->loading_ns));
        pre_gaps         = pos(sat_sub(sat_sub(t_work, t_use), in_setup));
    } else {
        t_use         = clamp(p->first_use_ns, p->start_ns, p->end_ns);
        t_work        = u.n ? clamp(u.v[0].a, t_use, p->end_ns) : p->end_ns;
        int64_t t_ctx = clamp(scalar_pid(db, "SELECT min(alloc_ns) FROM buffers WHERE pid = ?1 AND kind IN ('kv',"
                                             " 'compute') AND alloc_ns > 0", pid, t_work, NULL), t_use, t_work);
        p->loading_ns = sat_sub(t_ctx, t_use);
        p->context_ns = sat_sub(t_work, t_ctx);
    }
    p->start_up_ns = sat_sub(t_use, p->start_ns);
    int64_t u_end  = u.n ? clamp(u.v[u.n - 1].b, t_work, p->end_ns) : t_work;
    p->idle_ns      = ivl_covered(&idle, t_work, p->end_ns);
    p->host_gaps_ns = sat_add(pre_gaps, pos(sat_sub(sat_sub(sat_sub(u_end, t_work), ivl_covered(&u, t_work, u_end)),
                                                    ivl_covered(&idle, t_work, u_end))));
    if (p->first_token_ns) {
        p->ttft         = span_of(&g, &u, &idle, t_work, clamp(p->first_token_ns, t_work, p->end_ns));
        p->ttft.host_ns = sat_add(p->ttft.host_ns, pre_gaps);
    }
    if (llama_counters(db, p, &b, &btok, &ld) != 0) goto fail;
    if (p->n_gen_batches) p->gen = span_of(&g, &u, &idle, gen_a, gen_b);

    /* Compute per backend: its splits' time, else its OP and SYNC records' (a JSON profile, or level op only),
     * scaled into the graphs' time less the copies when they add up to more (backends computing at once). */
    int64_t left = p->wall_ns;
    cat_take(p, &left, "startup", p->start_up_ns);
    cat_take(p, &left, "loading", p->loading_ns);
    cat_take(p, &left, "context_setup", p->context_ns);
    sqlite3_stmt *st = NULL;
    const char *sql = scalar_pid(db, "SELECT count(*) FROM split_list WHERE pid = ?1", pid, 0, NULL)
        ? "SELECT ggprof_backend_label(b.name, s.backend_id), CAST(total(s.duration_ns) AS INTEGER)"
          " FROM split_list s LEFT JOIN backend_list b ON b.pid = s.pid AND b.sched_id = s.sched_id"
          " AND b.id = s.backend_id WHERE s.pid = ?1 AND s.duration_ns > 0 GROUP BY 1 ORDER BY 2 DESC, 1"
        : "SELECT ggprof_backend_label(b.name, e.backend_id), CAST(total(e.duration_ns) AS INTEGER)"
          " FROM events e LEFT JOIN backend_list b ON b.pid = e.pid AND b.sched_id = e.sched_id"
          " AND b.id = e.backend_id WHERE e.pid = ?1 AND e.type IN (0, 2) AND e.duration_ns > 0 GROUP BY 1"
          " ORDER BY 2 DESC, 1";
    int64_t in_graphs = g.n ? pos(sat_sub(p->graphs_ns, p->copies_ns)) : INT64_MAX, sum = 0;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_int(st, 1, pid);
        for (int pass = 0; pass < 2; pass++) {
            while (sqlite3_step(st) == SQLITE_ROW) {
                int64_t ns = pos(sqlite3_column_int64(st, 1));
                if (pass == 0) {
                    sum = sat_add(sum, ns);
                    continue;
                }
                if (sum > in_graphs) ns = (int64_t) ((double) ns * ((double) in_graphs / (double) sum));
                char name[72];
                const char *bn = (const char *) sqlite3_column_text(st, 0);
                snprintf(name, sizeof(name), "compute.%.60s", bn ? bn : "?");
                cat_take(p, &left, name, ns);
            }
            sqlite3_reset(st);
        }
    }
    sqlite3_finalize(st);
    cat_take(p, &left, "copies", p->copies_ns);
    cat_take(p, &left, "graph_build", p->graph_build_ns);
    cat_take(p, &left, "host_gaps", p->host_gaps_ns);
    cat_take(p, &left, "idle", p->idle_ns);
    cat_take(p, &left, "other", left);
    if (keep_ivls(p, &g, &u, &idle, &ld, &setup, t_use, t_work) != 0) goto fail;
    free(b.v), free(btok.v), free(bout.v), free(busy_idle.v);
    return 0;
fail:
    free(g.v), free(b.v), free(btok.v), free(bout.v), free(u.v), free(idle.v), free(busy_idle.v), free(ld.v),
        free(setup.v);
    return -1;
}

int ggprof_accounting_load(sqlite3 *db, ggprof_accounting *a, char *why, size_t why_len) {
    memset(a, 0, sizeof(*a));
    sqlite3_stmt *st = NULL;
    const char *sql = "SELECT pid FROM events UNION SELECT pid FROM graph_list UNION SELECT pid FROM batches ORDER BY 1";
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
        snprintf(why, why_len, "accounting: %s", sqlite3_errmsg(db));
        return -1;
    }
    size_t cap = 0;
    int    rc  = 0;
    while (rc == 0 && sqlite3_step(st) == SQLITE_ROW) {
        if (sqlite3_column_type(st, 0) == SQLITE_NULL) continue;
        if (a->n_procs == cap) {
            cap = cap ? 2 * cap : 4;
            ggprof_acc_proc *v = realloc(a->procs, cap * sizeof(*v));
            if (!v) {
                rc = -1;
                break;
            }
            a->procs = v;
        }
        ggprof_acc_proc *p = &a->procs[a->n_procs++];
        memset(p, 0, sizeof(*p));
        p->pid = sqlite3_column_int(st, 0);
    }
    sqlite3_finalize(st);
    for (size_t i = 0; rc == 0 && i < a->n_procs; i++) rc = account(db, &a->procs[i]);
    for (size_t i = 0; rc == 0 && i < a->n_procs; i++) {
        rc = ggprof_request_times(db, a->procs[i].pid, a->procs[i].tid, &a->procs[i].requests);
    }
    if (rc != 0) {
        snprintf(why, why_len, "accounting: out of memory");
        ggprof_accounting_free(a);
    }
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

/* ---------------------------------------------------------------- the categories laid on the wall time */

enum { K_STARTUP, K_LOADING, K_CONTEXT, K_HOST, K_GRAPH, K_BUILD, K_IDLE, K_OTHER, K_N };

/* The stretch each category is cut from (account() above): compute per backend and copies share the graphs. */
static int kind_of(const char *name) {
    static const char *const names[K_N] = { "startup", "loading", "context_setup", "host_gaps", NULL, "graph_build",
                                            "idle", "other" };
    for (int k = 0; k < K_N; k++) {
        if (names[k] && strcmp(name, names[k]) == 0) return k;
    }
    return strncmp(name, "compute.", 8) == 0 || strcmp(name, "copies") == 0 ? K_GRAPH : -1;
}

/* t inside one of the merged list m's intervals. */
static int ivl_in(const ivl_list *m, int64_t t) {
    size_t lo = 0, hi = m->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (m->v[mid].b <= t) lo = mid + 1;
        else hi = mid;
    }
    return lo < m->n && m->v[lo].a <= t;
}

typedef struct {
    ggprof_acc_slice *v;
    size_t            n, cap;
} slice_list;

/* Appends [a, b) as name (NULL: not yet given), merged into the last slice when it continues it. */
static int slice_push(slice_list *l, int64_t a, int64_t b, const char *name) {
    if (b <= a) return 0;
    if (l->n && l->v[l->n - 1].end_ns == a && l->v[l->n - 1].name == name) {
        l->v[l->n - 1].end_ns = b;
        return 0;
    }
    if (l->n == l->cap) {
        size_t            cap = l->cap ? 2 * l->cap : 64;
        ggprof_acc_slice *v   = realloc(l->v, cap * sizeof(*v));
        if (!v) return -1;
        l->v = v, l->cap = cap;
    }
    l->v[l->n++] = (ggprof_acc_slice) { a, b, name };
    return 0;
}

/* The wall cut where account() cut it, each piece given the kind of time it is (the rules of account()). */
static int wall_kinds(const ggprof_acc_proc *p, slice_list *runs, int8_t **kinds) {
    const struct ggprof_acc_ivls *k = p->ivls;
    const ivl_list *lists[] = { &k->g, &k->u, &k->idle, &k->ld, &k->setup };
    int64_t u_end = k->u.n ? clamp(k->u.v[k->u.n - 1].b, k->t_work, p->end_ns) : k->t_work;
    size_t  n = 5;
    for (size_t i = 0; i < 5; i++) n += 2 * lists[i]->n;
    int64_t *t = malloc(n * sizeof(*t));
    if (!t) return -1;
    n = 0;
    t[n++] = p->start_ns, t[n++] = p->end_ns, t[n++] = k->t_use, t[n++] = k->t_work, t[n++] = u_end;
    for (size_t i = 0; i < 5; i++) {
        for (size_t j = 0; j < lists[i]->n; j++) t[n++] = lists[i]->v[j].a, t[n++] = lists[i]->v[j].b;
    }
    for (size_t i = 0; i < n; i++) t[i] = clamp(t[i], p->start_ns, p->end_ns);
    ivl_list pts = { 0 };
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < n; i++) rc = ivl_push(&pts, t[i], 0);
    free(t);
    if (rc != 0) {
        free(pts.v);
        return -1;
    }
    qsort(pts.v, pts.n, sizeof(*pts.v), ivl_cmp);
    int8_t *kv = NULL;
    for (size_t i = 0; rc == 0 && i + 1 < pts.n; i++) {
        int64_t x = pts.v[i].a, y = pts.v[i + 1].a;
        if (y <= x) continue;
        int kind = x < k->t_use          ? K_STARTUP
                   : x < k->t_work       ? (ivl_in(&k->setup, x) ? (ivl_in(&k->ld, x) ? K_LOADING : K_CONTEXT) : K_HOST)
                   : ivl_in(&k->u, x)    ? (ivl_in(&k->g, x) ? K_GRAPH : K_BUILD)
                   : ivl_in(&k->idle, x) ? K_IDLE
                   : x < u_end           ? K_HOST
                                         : K_OTHER;
        if (runs->n && runs->v[runs->n - 1].end_ns == x && kv[runs->n - 1] == kind) {
            runs->v[runs->n - 1].end_ns = y;
            continue;
        }
        if (runs->n == runs->cap) {
            size_t            cap = runs->cap ? 2 * runs->cap : 64;
            ggprof_acc_slice *v   = realloc(runs->v, cap * sizeof(*v));
            int8_t           *w   = v ? realloc(kv, cap) : NULL;
            if (v) runs->v = v;
            if (!w) {
                rc = -1;
                break;
            }
            kv = w, runs->cap = cap;
        }
        runs->v[runs->n] = (ggprof_acc_slice) { x, y, NULL };
        kv[runs->n++]    = (int8_t) kind;
    }
    free(pts.v);
    *kinds = kv;
    return rc;
}

int ggprof_accounting_slices(const ggprof_acc_proc *p, ggprof_acc_slice **out, size_t *n_out) {
    *out = NULL, *n_out = 0;
    if (!p->ivls || p->end_ns <= p->start_ns) return 0;
    slice_list runs = { 0 }, first = { 0 }, fin = { 0 };
    int8_t    *kinds = NULL;
    int64_t    rem[GGPROF_ACC_MAX_CATS];
    int        of_kind[K_N], other = -1;
    for (int k = 0; k < K_N; k++) of_kind[k] = -1;
    for (size_t i = 0; i < p->n_cats; i++) {
        rem[i]   = p->cats[i].ns;
        int kind = kind_of(p->cats[i].name);
        if (kind == K_OTHER) other = (int) i;
        else if (kind >= 0 && kind != K_GRAPH) of_kind[kind] = (int) i;
    }
    if (wall_kinds(p, &runs, &kinds) != 0) goto fail;
    /* The graphs' time shared by compute per backend, copies and the rest (gi[ng]: given later), each run of graphs
     * given to each its share so far (floor(X q / R) at the run's end X, what is owed carried on): over all of the
     * graphs each gets exactly its q. */
    int64_t R = 0, q[GGPROF_ACC_MAX_CATS + 1], asg[GGPROF_ACC_MAX_CATS + 1] = { 0 };
    int     gi[GGPROF_ACC_MAX_CATS + 1], ng = 0;
    for (size_t i = 0; i < runs.n; i++) {
        if (kinds[i] == K_GRAPH) R = sat_add(R, runs.v[i].end_ns - runs.v[i].start_ns);
    }
    int64_t in_g = 0;
    for (size_t i = 0; i < p->n_cats; i++) {
        if (kind_of(p->cats[i].name) != K_GRAPH) continue;
        q[ng]  = rem[i] < R - in_g ? rem[i] : R - in_g;
        in_g  += q[ng];
        rem[i] -= q[ng];
        gi[ng++] = (int) i;
    }
    q[ng] = R - in_g, gi[ng] = -1;
    int64_t X = 0;
    for (size_t i = 0; i < runs.n; i++) {
        int64_t a = runs.v[i].start_ns, b = runs.v[i].end_ns, len = b - a;
        if (kinds[i] != K_GRAPH) {
            int     c    = of_kind[kinds[i]];
            int64_t take = c < 0 ? 0 : rem[c] < len ? rem[c] : len;
            if (c >= 0) rem[c] -= take;
            if (slice_push(&first, a, a + take, c >= 0 ? p->cats[c].name : NULL) != 0 ||
                slice_push(&first, a + take, b, NULL) != 0)
                goto fail;
            continue;
        }
        int64_t X1 = X + len, left = len, d[GGPROF_ACC_MAX_CATS + 1];
        for (int k = 0; k <= ng; k++) {
            int64_t t = (int64_t) ((__int128) X1 * q[k] / R);
            d[k]      = clamp(t - asg[k], 0, left);
            left -= d[k];
        }
        for (int k = 0; k <= ng && left > 0; k++) {
            int64_t e = q[k] - asg[k] - d[k];
            if (e > left) e = left;
            d[k] += e, left -= e;
        }
        int64_t cur = a;
        for (int k = 0; k <= ng; k++) {
            if (slice_push(&first, cur, cur + d[k], gi[k] >= 0 ? p->cats[gi[k]].name : NULL) != 0) goto fail;
            cur += d[k], asg[k] += d[k];
        }
        if (slice_push(&first, cur, b, NULL) != 0) goto fail;
        X = X1;
    }
    /* What no stretch held (time a category has beyond its stretch: cut short, or counted twice by account()) and
     * "other" go, in time order, to the time no category took. */
    size_t c = 0;
    for (size_t i = 0; i < first.n; i++) {
        int64_t a = first.v[i].start_ns, b = first.v[i].end_ns;
        if (first.v[i].name) {
            if (slice_push(&fin, a, b, first.v[i].name) != 0) goto fail;
            continue;
        }
        while (a < b) {
            while (c < p->n_cats && ((int) c == other || rem[c] <= 0)) c++;
            int         k    = c < p->n_cats ? (int) c : other;
            int64_t     take = k >= 0 && rem[k] < b - a ? rem[k] : b - a;
            const char *name = k >= 0 && rem[k] > 0 ? p->cats[k].name : "other";
            if (k >= 0 && rem[k] > 0) rem[k] -= take;
            else take = b - a;
            if (slice_push(&fin, a, a + take, name) != 0) goto fail;
            a += take;
        }
    }
    free(runs.v), free(first.v), free(kinds);
    *out = fin.v, *n_out = fin.n;
    return 0;
fail:
    free(runs.v), free(first.v), free(fin.v), free(kinds);
    return -1;
}

void ggprof_accounting_json(FILE *out, const ggprof_accounting *a, const char *indent, unsigned json_flags) {
    fputc('[', out);
    for (size_t i = 0; i < a->n_procs; i++) {
        const ggprof_acc_proc *p = &a->procs[i];
        fprintf(out, "%s\n%s  {\"pid\": %d, \"wall_ns\": %" PRId64 ", \"start_known\": %s, \"categories\": {", i ? "," : "",
                indent, p->pid, p->wall_ns, p->start_known ? "true" : "false");
        for (size_t k = 0; k < p->n_cats; k++) {
            fputs(k ? ", " : "", out);
            ggprof_json_put(out, p->cats[k].name, json_flags);
            fprintf(out, ": %" PRId64, p->cats[k].ns);
        }
        fprintf(out, "},\n%s   \"phases\": {\"prompt_ns\": %" PRId64 ", \"prompt_tokens\": %" PRId64 ", \"prompt_batches\": %" PRId64
                ", \"generation_ns\": %" PRId64 ", \"generation_runs\": %" PRId64 ", \"decode_ns\": %" PRId64
                ", \"graphs_ns\": %" PRId64 ", \"graphs\": %" PRId64 ", \"setup_measured\": %s", indent, p->prompt_ns,
                p->n_prompt_tokens, p->n_prompt_batches, p->generation_ns, p->n_gen_batches, p->batch_ns, p->graphs_ns,
                p->n_graphs, p->setup_measured ? "true" : "false");
        const char *const llama_names[2] = { "llama_load_ns", "llama_total_ns" };
        const int64_t     llama_ns[2]    = { p->llama_load_ns, p->llama_total_ns };
        for (int k = 0; k < 2; k++) {
            if (llama_ns[k] >= 0) fprintf(out, ", \"%s\": %" PRId64, llama_names[k], llama_ns[k]);
            else fprintf(out, ", \"%s\": null", llama_names[k]);
        }
        fprintf(out, "},\n");
        fprintf(out, "%s   \"end_known\": %s, \"tid\": %d, \"page_faults\": {\"minor\": %" PRId64 ", \"major\": %" PRId64 "},"
                " \"weights\": {\"buffers\": %" PRId64 ", \"bytes\": %" PRId64 "},\n", indent, p->exit_known ? "true" : "false",
                p->tid, p->minflt, p->majflt, p->n_weights, p->weights_bytes);
        if (p->first_token_ns) {
            const ggprof_acc_span *t = &p->ttft;
            fprintf(out, "%s   \"ttft\": {\"ns\": %" PRId64 ", \"startup_ns\": %" PRId64 ", \"loading_ns\": %" PRId64
                    ", \"context_setup_ns\": %" PRId64 ", \"compute_ns\": %" PRId64 ", \"graph_build_ns\": %" PRId64
                    ", \"host_ns\": %" PRId64 ", \"idle_ns\": %" PRId64 "},\n", indent,
                    pos(sat_sub(p->first_token_ns, p->start_ns)), p->start_up_ns, p->loading_ns, p->context_ns,
                    t->compute_ns, t->graph_build_ns, t->host_ns, t->idle_ns);
        } else {
            fprintf(out, "%s   \"ttft\": null,\n", indent);
        }
        if (p->n_gen_batches) {
            const ggprof_acc_span *t = &p->gen;
            int64_t n = p->n_gen_batches;
            fprintf(out, "%s   \"per_token\": {\"tokens\": %" PRId64 ", \"ns\": %" PRId64 ", \"compute_ns\": %" PRId64
                    ", \"graph_build_ns\": %" PRId64 ", \"host_ns\": %" PRId64 ", \"idle_ns\": %" PRId64 "}", indent, n,
                    t->ns / n, t->compute_ns / n, t->graph_build_ns / n, t->host_ns / n, t->idle_ns / n);
        } else {
            fprintf(out, "%s   \"per_token\": null", indent);
        }
        fprintf(out, ",\n%s   \"requests\": ", indent);
        ggprof_request_times_json(out, &p->requests);
        fputc('}', out);
    }
    fprintf(out, "%s%s]", a->n_procs ? "\n" : "", a->n_procs ? indent : "");
}

static double ms(int64_t ns) { return (double) ns / 1e6; }

void ggprof_accounting_print(FILE *out, const ggprof_accounting *a) {
    if (!a->n_procs) return;
    fprintf(out, "=== Where the time went ===\n");
    for (size_t i = 0; i < a->n_procs; i++) {
        const ggprof_acc_proc *p = &a->procs[i];
        fprintf(out, "  pid %d: %.3f ms, %s to %s\n", p->pid, ms(p->wall_ns),
                p->start_known ? "its start" : "its first record", p->exit_known ? "its exit (measured by record)"
                                                                                  : "its last record");
        for (size_t k = 0; k < p->n_cats; k++) {
            if (!p->cats[k].ns) continue;
            char safe[96];
            fprintf(out, "    %-24s %12.3f ms %6.1f%%", ggprof_text_safe(p->cats[k].name, safe, sizeof(safe)),
                    ms(p->cats[k].ns), p->wall_ns ? 100.0 * (double) p->cats[k].ns / (double) p->wall_ns : 0.0);
            if (strcmp(p->cats[k].name, "loading") == 0 && p->n_weights) {
                fprintf(out, "  (%" PRId64 " weights buffer%s, %.1f MiB, %.0f MB/s at least)", p->n_weights,
                        p->n_weights == 1 ? "" : "s", (double) p->weights_bytes / (1 << 20),
                        (double) p->weights_bytes / 1e6 / ((double) p->cats[k].ns / 1e9));
            }
            fputc('\n', out);
        }
        if (p->minflt >= 0) fprintf(out, "    page faults: %" PRId64 " minor, %" PRId64 " major\n", p->minflt, p->majflt);
        if (p->n_prompt_batches || p->n_gen_batches) {
            fprintf(out, "    prompt %.3f ms (%" PRId64 " tokens in %" PRId64 " llama_decode), generation %.3f ms (%" PRId64
                    " runs)\n", ms(p->prompt_ns), p->n_prompt_tokens, p->n_prompt_batches, ms(p->generation_ns),
                    p->n_gen_batches);
        }
        if (p->llama_load_ns >= 0 || p->llama_total_ns >= 0) {
            fprintf(out, "    llama.cpp's own counters, as it computes them:");
            if (p->llama_load_ns >= 0) {
                fprintf(out, " load time %.3f ms (from its last perf reset, else the model load's start, to the end of"
                        " the first llama_decode)", ms(p->llama_load_ns));
            }
            if (p->llama_total_ns >= 0) fprintf(out, "%s total time %.3f ms", p->llama_load_ns >= 0 ? "," : "", ms(p->llama_total_ns));
            fputc('\n', out);
        }
        if (p->first_token_ns) {
            const ggprof_acc_span *t = &p->ttft;
            fprintf(out, "    time to first token %.3f ms: startup %.3f, loading %.3f, context set-up %.3f, prompt graphs"
                    " %.3f, graph build %.3f, host %.3f, idle %.3f\n", ms(pos(sat_sub(p->first_token_ns, p->start_ns))),
                    ms(p->start_up_ns), ms(p->loading_ns), ms(p->context_ns), ms(t->compute_ns), ms(t->graph_build_ns),
                    ms(t->host_ns), ms(t->idle_ns));
        }
        if (p->n_gen_batches) {
            const ggprof_acc_span *t = &p->gen;
            int64_t n = p->n_gen_batches;
            fprintf(out, "    per generated token %.3f ms: graphs %.3f, graph build %.3f, host %.3f, idle %.3f\n",
                    ms(t->ns / n), ms(t->compute_ns / n), ms(t->graph_build_ns / n), ms(t->host_ns / n), ms(t->idle_ns / n));
        }
        ggprof_request_times_print(out, &p->requests, p->start_ns, 10, "    ");
    }
    fputc('\n', out);
}

/* ---------------------------------------------------------------- the threads' slices */

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

/* The rows of one table (a table an older trace lacks: none): pid, tid, start, duration, name, then nv values. */
static int thread_slices_add(sqlite3 *db, ggprof_thread_slices *s, const char *sql, int what, int nv) {
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) return 0;
    int rc = 0;
    while (rc == 0 && sqlite3_step(st) == SQLITE_ROW) {
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

int ggprof_thread_slices_load(sqlite3 *db, ggprof_thread_slices *s) {
    memset(s, 0, sizeof(*s));
    int rc = thread_slices_add(db, s, "SELECT pid, tid, start_ns, duration_ns, name, depth FROM regions", GGPROF_TS_REGION, 1);
    if (rc == 0) {
        rc = thread_slices_add(db, s, "SELECT pid, tid, start_ns, duration_ns, api, batch_id, n_tokens, n_seqs,"
                                      " n_outputs, status FROM batches", GGPROF_TS_BATCH, 5);
    }
    if (rc == 0) {
        rc = thread_slices_add(db, s, "SELECT pid, tid, start_ns, end_ns - start_ns, NULL FROM thread_idle"
                                      " WHERE end_ns >= start_ns", GGPROF_TS_IDLE, 0);
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
        ggprof_thread_slices_free(s);
        return -1;
    }
    ggprof_sort(s->v, s->n, sizeof(*s->v), cmp_thread_slice);
    return 0;
}
