/* Each request of a llama.cpp program accounted for (request_time.h, docs/findings.md "Per request"). */
#include "request_time.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "intervals.h"

const char *const ggprof_req_cat_names[GGPROF_REQ_N_CATS] = {
    "prompt", "generation", "graph_build", "shared", "other_requests", "idle", "host" };

int ggprof_requests_walk(sqlite3 *db, int64_t pid, const ggprof_request_walker *w, char *why, size_t why_len) {
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, "SELECT b.pid, s.seq_id, b.start_ns, b.duration_ns, b.n_seqs, s.n_tokens, s.pos_min,"
                               " s.pos_max, s.n_outputs, b.batch_id FROM batches b JOIN batch_seqs s ON s.pid = b.pid AND"
                               " s.batch_id = b.batch_id WHERE b.status = 0 AND (?1 < 0 OR b.pid = ?1)"
                               " ORDER BY b.pid, s.seq_id, b.batch_id", -1, &st, NULL) != SQLITE_OK) {
        snprintf(why, why_len, "this trace has no llama_decode batches (it was recorded by an older ggprof): %s",
                 sqlite3_errmsg(db));
        return -1;
    }
    sqlite3_bind_int64(st, 1, pid);
    ggprof_request q;
    int open = 0, rc = 0, step;
    while (rc == 0 && (step = sqlite3_step(st)) == SQLITE_ROW) {
        ggprof_request_batch b = {
            sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1), sqlite3_column_int64(st, 9),
            sqlite3_column_int64(st, 2), sqlite3_column_int64(st, 3), sqlite3_column_int64(st, 4),
            sqlite3_column_int64(st, 5), sqlite3_column_int64(st, 6), sqlite3_column_int64(st, 7),
            sqlite3_column_int(st, 8) };
        if (open && ggprof_request_continues(&q, &b)) {
            ggprof_request_add(&q, &b);
        } else {
            if (open && w->done) rc = w->done(w->ctx, &q);
            if (rc) break;
            ggprof_request_begin(&q, &b);
            open = 1;
        }
        if (w->batch) rc = w->batch(w->ctx, &q, &b);
    }
    if (rc == 0 && step != SQLITE_DONE) {
        snprintf(why, why_len, "%s", sqlite3_errmsg(db));
        rc = -1;
    }
    if (rc == 0 && open && w->done) rc = w->done(w->ctx, &q);
    sqlite3_finalize(st);
    return rc;
}

/* ------------------------------------------------------------ one process's requests */

typedef struct { /* one request's part of one batch */
    int64_t batch, tokens, outputs;
    int     prompt;
} part;

typedef struct { /* one batch of the process */
    int64_t id, start, end, tokens; /* tokens: its sequences' tokens added up */
} batch_row;

typedef struct {
    part            *parts;
    size_t           n_parts, cap_parts, first_part;
    ggprof_req_time *reqs;
    size_t          *req_part; /* each request's first part; its last is the next one's first */
    size_t           n_reqs, cap_reqs, cap_req_part;
} walk_ctx;

static int grow(void **v, size_t *cap, size_t n, size_t size) {
    if (n < *cap) return 0;
    size_t c = *cap ? 2 * *cap : 16;
    void  *p = realloc(*v, c * size);
    if (!p) return -1;
    *v = p, *cap = c;
    return 0;
}

static int on_batch(void *vctx, const ggprof_request *q, const ggprof_request_batch *b) {
    walk_ctx *c = vctx;
    if (grow((void **) &c->parts, &c->cap_parts, c->n_parts, sizeof(*c->parts)) != 0) return 1;
    c->parts[c->n_parts++] = (part) { b->batch, b->n_tokens, b->n_outputs, !q->generating };
    return 0;
}

static int on_done(void *vctx, const ggprof_request *q) {
    walk_ctx *c = vctx;
    if (!ggprof_request_answered(q)) { /* the warm-up: its parts go */
        c->n_parts = c->first_part;
        return 0;
    }
    if (grow((void **) &c->reqs, &c->cap_reqs, c->n_reqs, sizeof(*c->reqs)) != 0) return 1;
    if (grow((void **) &c->req_part, &c->cap_req_part, c->n_reqs + 1, sizeof(*c->req_part)) != 0) return 1;
    ggprof_req_time *r = &c->reqs[c->n_reqs];
    memset(r, 0, sizeof(*r));
    r->seq = q->seq, r->first_batch = q->first_batch, r->n_batches = q->n_batches;
    r->prompt_tokens = q->prompt_tokens, r->generated_tokens = ggprof_request_generated(q), r->gen_decodes = q->gen_decodes;
    c->req_part[c->n_reqs++] = c->first_part;
    c->req_part[c->n_reqs]   = c->first_part = c->n_parts;
    return 0;
}

static int batch_cmp(const void *x, const void *y) {
    const batch_row *p = x, *q = y;
    return p->id != q->id ? (p->id < q->id ? -1 : 1) : 0;
}

static const batch_row *find_batch(const batch_row *v, size_t n, int64_t id) {
    batch_row key = { id, 0, 0, 0 };
    return bsearch(&key, v, n, sizeof(*v), batch_cmp);
}

static int load_list(sqlite3 *db, const char *sql, int32_t pid, int tid, ivl_list *l) {
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) return 0; /* a table this trace lacks */
    sqlite3_bind_int(st, 1, pid);
    sqlite3_bind_int(st, 2, tid);
    int rc = 0;
    while (rc == 0 && sqlite3_step(st) == SQLITE_ROW) rc = ivl_push(l, sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1));
    sqlite3_finalize(st);
    return rc;
}

/* x * num / den without overflow, for 0 <= num <= den. */
static int64_t share(int64_t x, int64_t num, int64_t den) {
    return den > 0 ? (int64_t) ((__int128) x * num / den) : x;
}

/* r's categories from its parts p[0..n): its batches (graphs in g), the process's batches and graphs (u) and the
 * decoding thread's idle runs outside them (idle). */
static void account_request(ggprof_req_time *r, const part *p, size_t n, const batch_row *bv, size_t nb,
                            const ivl_list *g, const ivl_list *u, const ivl_list *idle) {
    int64_t a = INT64_MAX, b = INT64_MIN, first_out = INT64_MIN;
    for (size_t i = 0; i < n; i++) {
        const batch_row *x = find_batch(bv, nb, p[i].batch);
        if (!x) continue;
        if (x->start < a) a = x->start;
        if (x->end > b) b = x->end;
        if (first_out == INT64_MIN && p[i].outputs > 0) first_out = x->end;
    }
    r->ttft_ns = r->per_token_ns = -1;
    if (a > b) return; /* no batch found: nothing to account */
    r->start_ns = a, r->wall_ns = sat_sub(b, a);
    int64_t raw[GGPROF_REQ_N_CATS] = { 0 }, prev = a, own = 0;
    for (size_t i = 0; i < n; i++) { /* its batches, each counted once where they overlap */
        const batch_row *x = find_batch(bv, nb, p[i].batch);
        if (!x) continue;
        int64_t s = x->start > prev ? x->start : prev, e = x->end;
        if (e <= s) continue;
        prev = e;
        int64_t d = sat_sub(e, s), in_g = ivl_covered(g, s, e), built = pos(sat_sub(d, in_g));
        int64_t tok = clamp(p[i].tokens, 0, x->tokens > 0 ? x->tokens : 0), tot = x->tokens;
        if (tot <= 0) tok = tot = 1; /* no sequence told its tokens: the batch is the request's */
        int64_t mine_g = share(in_g, tok, tot), mine_b = share(built, tok, tot);
        raw[p[i].prompt ? GGPROF_REQ_PROMPT : GGPROF_REQ_GENERATION] = sat_add(raw[p[i].prompt ? GGPROF_REQ_PROMPT
                                                                                  : GGPROF_REQ_GENERATION], mine_g);
        raw[GGPROF_REQ_GRAPH_BUILD] = sat_add(raw[GGPROF_REQ_GRAPH_BUILD], mine_b);
        raw[GGPROF_REQ_SHARED]      = sat_add(raw[GGPROF_REQ_SHARED], pos(sat_sub(sat_sub(d, mine_g), mine_b)));
        own = sat_add(own, d);
    }
    int64_t in_u = ivl_covered(u, a, b);
    raw[GGPROF_REQ_OTHER_REQUESTS] = pos(sat_sub(in_u, own));
    raw[GGPROF_REQ_IDLE]           = ivl_covered(idle, a, b);
    int64_t left = r->wall_ns; /* each taken from what is left, the rest host: they add up to the wall exactly */
    for (int k = 0; k < GGPROF_REQ_HOST; k++) {
        r->cats[k] = clamp(raw[k], 0, left);
        left -= r->cats[k];
    }
    r->cats[GGPROF_REQ_HOST] = left;
    if (first_out != INT64_MIN) {
        r->ttft_ns = pos(sat_sub(first_out, a));
        if (r->gen_decodes > 0) r->per_token_ns = pos(sat_sub(b, first_out)) / r->gen_decodes;
    }
}

static int req_start_cmp(const void *x, const void *y) {
    const ggprof_req_time *p = x, *q = y;
    if (p->start_ns != q->start_ns) return p->start_ns < q->start_ns ? -1 : 1;
    return p->seq != q->seq ? (p->seq < q->seq ? -1 : 1) : 0;
}

int ggprof_request_times(sqlite3 *db, int32_t pid, int tid, ggprof_req_times *out) {
    memset(out, 0, sizeof(*out));
    walk_ctx       c  = { 0 };
    ggprof_request_walker w = { on_batch, on_done, &c };
    char           why[256];
    batch_row     *bv = NULL;
    size_t         nb = 0, cap_b = 0;
    ivl_list       g = { 0 }, u = { 0 }, busy_idle = { 0 }, idle = { 0 };
    int            rc = ggprof_requests_walk(db, pid, &w, why, sizeof(why));
    if (rc == -1) rc = 0, c.n_reqs = 0; /* no batches table (an older trace, a JSON profile): no requests */
    if (rc != 0 || c.n_reqs == 0) goto done;
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, "SELECT b.batch_id, b.start_ns, b.duration_ns, COALESCE(t.n, 0) FROM batches b LEFT JOIN"
                               " (SELECT batch_id, CAST(total(n_tokens) AS INTEGER) AS n FROM batch_seqs WHERE pid = ?1"
                               " AND n_tokens > 0 GROUP BY batch_id) t ON t.batch_id = b.batch_id WHERE b.pid = ?1", -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_int(st, 1, pid);
        while (rc == 0 && sqlite3_step(st) == SQLITE_ROW) {
            rc = grow((void **) &bv, &cap_b, nb, sizeof(*bv));
            if (rc) break;
            int64_t s = sqlite3_column_int64(st, 1);
            bv[nb++]  = (batch_row) { sqlite3_column_int64(st, 0), s, sat_add(s, pos(sqlite3_column_int64(st, 2))),
                                      sqlite3_column_int64(st, 3) };
            rc = ivl_push(&u, s, sqlite3_column_int64(st, 2));
        }
    }
    sqlite3_finalize(st);
    if (rc == 0) rc = load_list(db, "SELECT start_ns, duration_ns FROM graph_list WHERE pid = ?1", pid, tid, &g);
    for (size_t i = 0; rc == 0 && i < g.n; i++) rc = ivl_push(&u, g.v[i].a, sat_sub(g.v[i].b, g.v[i].a));
    if (rc == 0) rc = load_list(db, "SELECT start_ns, end_ns - start_ns FROM thread_idle WHERE pid = ?1 AND tid = ?2", pid,
                                tid, &busy_idle);
    if (rc != 0) goto done;
    qsort(bv, nb, sizeof(*bv), batch_cmp);
    ivl_merge(&g), ivl_merge(&u), ivl_merge(&busy_idle);
    if ((rc = ivl_minus(&busy_idle, &u, &idle)) != 0) goto done;
    ivl_merge(&idle);
    for (size_t i = 0; i < c.n_reqs; i++) {
        account_request(&c.reqs[i], c.parts + c.req_part[i], c.req_part[i + 1] - c.req_part[i], bv, nb, &g, &u, &idle);
    }
    qsort(c.reqs, c.n_reqs, sizeof(*c.reqs), req_start_cmp);
    out->v = c.reqs, out->n = c.n_reqs, c.reqs = NULL;
done:
    free(c.parts), free(c.reqs), free(c.req_part), free(bv), free(g.v), free(u.v), free(busy_idle.v), free(idle.v);
    return rc ? -1 : 0;
}

void ggprof_request_times_free(ggprof_req_times *r) {
    free(r->v);
    memset(r, 0, sizeof(*r));
}

static void put_opt(FILE *out, int64_t v) {
    if (v < 0) fputs("null", out);
    else fprintf(out, "%" PRId64, v);
}

void ggprof_request_times_json(FILE *out, const ggprof_req_times *r) {
    fputc('[', out);
    for (size_t i = 0; i < r->n; i++) {
        const ggprof_req_time *q = &r->v[i];
        fprintf(out, "%s{\"seq\": %" PRId64 ", \"first_batch\": %" PRId64 ", \"start_ns\": %" PRId64 ", \"wall_ns\": %" PRId64
                ", \"categories\": {", i ? ", " : "", q->seq, q->first_batch, q->start_ns, q->wall_ns);
        for (int k = 0; k < GGPROF_REQ_N_CATS; k++) {
            fprintf(out, "%s\"%s\": %" PRId64, k ? ", " : "", ggprof_req_cat_names[k], q->cats[k]);
        }
        fprintf(out, "}, \"batches\": %" PRId64 ", \"prompt_tokens\": %" PRId64 ", \"generated_tokens\": %" PRId64
                ", \"ttft_ns\": ", q->n_batches, q->prompt_tokens, q->generated_tokens);
        put_opt(out, q->ttft_ns);
        fputs(", \"per_token_ns\": ", out);
        put_opt(out, q->per_token_ns);
        fputc('}', out);
    }
    fputc(']', out);
}

/* The longest time to first token first (a request without one, first of all), then the earliest. */
static int ttft_cmp(const void *x, const void *y) {
    const ggprof_req_time *p = *(const ggprof_req_time *const *) x, *q = *(const ggprof_req_time *const *) y;
    int64_t a = p->ttft_ns < 0 ? INT64_MAX : p->ttft_ns, b = q->ttft_ns < 0 ? INT64_MAX : q->ttft_ns;
    if (a != b) return a > b ? -1 : 1;
    return req_start_cmp(p, q);
}

static double ms(int64_t ns) { return (double) ns / 1e6; }

void ggprof_request_times_print(FILE *out, const ggprof_req_times *r, int64_t t0, size_t max_rows, const char *indent) {
    if (!r->n) return;
    const ggprof_req_time **by = malloc(r->n * sizeof(*by));
    if (!by) return;
    for (size_t i = 0; i < r->n; i++) by[i] = &r->v[i];
    qsort(by, r->n, sizeof(*by), ttft_cmp);
    fprintf(out, "%srequests: %zu, the longest time to first token first; %% of each one's wall:\n", indent, r->n);
    fprintf(out, "%s  %5s %9s %10s %9s %8s %6s %5s | %6s %5s %5s %6s %6s %5s %5s\n", indent, "seq", "start s", "wall ms",
            "TTFT ms", "ms/tok", "p.tok", "g.tok", "prompt", "gen", "build", "shared", "others", "idle", "host");
    for (size_t i = 0; i < r->n && i < max_rows; i++) {
        const ggprof_req_time *q = by[i];
        char ttft[32], tok[32];
        if (q->ttft_ns >= 0) snprintf(ttft, sizeof(ttft), "%.3f", ms(q->ttft_ns));
        else snprintf(ttft, sizeof(ttft), "-");
        if (q->per_token_ns >= 0) snprintf(tok, sizeof(tok), "%.3f", ms(q->per_token_ns));
        else snprintf(tok, sizeof(tok), "-");
        fprintf(out, "%s  %5" PRId64 " %9.3f %10.3f %9s %8s %6" PRId64 " %5" PRId64 " |", indent, q->seq,
                (double) sat_sub(q->start_ns, t0) / 1e9, ms(q->wall_ns), ttft, tok, q->prompt_tokens, q->generated_tokens);
        static const int order[] = { GGPROF_REQ_PROMPT, GGPROF_REQ_GENERATION, GGPROF_REQ_GRAPH_BUILD, GGPROF_REQ_SHARED,
                                     GGPROF_REQ_OTHER_REQUESTS, GGPROF_REQ_IDLE, GGPROF_REQ_HOST };
        static const int width[] = { 6, 5, 5, 6, 6, 5, 5 };
        for (size_t k = 0; k < sizeof(order) / sizeof(order[0]); k++) {
            fprintf(out, " %*.1f", width[k], q->wall_ns ? 100.0 * (double) q->cats[order[k]] / (double) q->wall_ns : 0.0);
        }
        fputc('\n', out);
    }
    if (r->n > max_rows) fprintf(out, "%s  ... and %zu more (report --format json lists them all)\n", indent, r->n - max_rows);
    free(by);
}
