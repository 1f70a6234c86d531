/* ggprof rollup: time by layer, model block, phase (prompt vs generation) or per-graph latency, from the views. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sort.h"
#include "cli.h"
#include "analyzer_commands.h"
#include "hash.h"
#include "model.h"
#include "output.h"
#include "request_time.h"
#include "trace.h"
#include "layer_rule.h"
#include "views.h"

const char ggprof_usage_rollup[] =
    "usage: ggprof rollup TRACE " GGPROF_HELP_SYNOPSIS "\n"
    "\n"
    "Rolls the records of TRACE up (--by is needed):\n"
    "  --by layer   per layer (llama.cpp's \"Qcur-3\", GGUF's \"blk.3.\"; '-' for records with none): OP\n"
    "               records, OP time, % of the trace's OP time, then SYNC time (barrier waits) and COPY\n"
    "               time in their own columns\n"
    "  --by block   per model block: attention, ffn, moe, norm, input, output, other, then sync and copy\n"
    "               rows; time and % of the trace's OP time\n"
    "  --by phase   prompt processing vs token generation (tokens in each graph's batch: 1 = generation):\n"
    "               graphs, tokens, graph time, time per token, tokens/s, OP, SYNC and COPY time\n"
    "  --by graph   per phase, the spread of each graph's latency per token: mean, min, median, p90, max,\n"
    "               standard deviation\n"
    "  --by request per request of a llama.cpp program (llama-server, node-llama-cpp...): each sequence's\n"
    "               llama_decode batches from a prompt on. Prompt tokens and ms, generated tokens (decoded,\n"
    "               plus the first, sampled from the prompt), generation ms and ms per token, the mean\n"
    "               sequences in its generation batches, ms per token alone and when batched with others\n"
    GGPROF_HELP_OPTIONS
    "\n"
    "The same numbers are in the views layer_time, layer_op_time, block_time, block_op_time, graph_phase\n"
    "and phase_time of 'ggprof query'; rules and columns in docs/rollups-and-diff.md and docs/queries.md.\n";

/* A view's value as a cell: d integer, m ns shown in ms, p a real (percentage, rate), s text; NULL is empty. */
static void cell_of(ggprof_table *t, sqlite3_stmt *st, int i, char conv) {
    if (sqlite3_column_type(st, i) == SQLITE_NULL) {
        ggprof_table_null(t);
        return;
    }
    switch (conv) {
    case 'd': ggprof_table_int(t, sqlite3_column_int64(st, i)); break;
    case 'm': ggprof_table_real(t, sqlite3_column_double(st, i) / 1e6); break;
    case 'p': ggprof_table_real(t, sqlite3_column_double(st, i)); break;
    default: ggprof_table_text(t, (const char *) sqlite3_column_text(st, i));
    }
}

/* ------------------------------------------------------------ layers and blocks, from the one pass (model.h) */

/* The records summed by layer, type, name and node: a few thousand rows, from which every layer and block
 * roll-up is made. The views layer_time, layer_op_time, block_time and block_op_time say the same in SQL
 * (tests/e2e/rollup.sh checks that they agree); grouping a million rows there took seconds. */
typedef struct {
    int32_t     layer, type;
    uint32_t    name, node;
    const char *block;
    int64_t     count, ns;
} part;

typedef struct {
    part    *v;
    size_t   n;
    int64_t  op_ns;
    char   **names;
} parts;

static uint64_t part_hash(int32_t layer, int32_t type, uint32_t name, uint32_t node) {
    uint64_t h = ggprof_fnv_step(GGPROF_FNV_OFFSET, (uint32_t) layer);
    h = ggprof_fnv_step(h, (uint32_t) type);
    h = ggprof_fnv_step(h, name);
    return ggprof_fnv_step(h, node);
}

static uint64_t part_at(const void *ctx, size_t i) {
    const part *x = &((const parts *) ctx)->v[i];
    return part_hash(x->layer, x->type, x->name, x->node);
}

static int same_part(const void *ctx, size_t i, const void *key) {
    const part *x = &((const parts *) ctx)->v[i];
    const ggprof_model_rec *r = key;
    return x->layer == r->layer && x->type == r->type && x->name == r->name && x->node == r->node;
}

/* ggprof_model_each's consumer: a graph's records into their parts. */
typedef struct {
    parts       *p;
    ggprof_index index;
    size_t       cap;
} parts_pass;

static int parts_add(void *ctx, const ggprof_model *l, const ggprof_model_rec *rec, size_t n, const ggprof_model_graph *g) {
    (void) g;
    parts_pass *pp = ctx;
    parts      *p  = pp->p;
    for (size_t i = 0; i < n; i++) {
        const ggprof_model_rec *r = &rec[i];
        if (ggprof_index_reserve(&pp->index, 0, p->n, part_at, p) != 0) return -1;
        uint32_t *slot = ggprof_index_slot(&pp->index, part_hash(r->layer, r->type, r->name, r->node), same_part, p, r);
        if (!*slot) {
            if (p->n == pp->cap) {
                pp->cap = pp->cap ? pp->cap * 2 : 256;
                part *v = realloc(p->v, pp->cap * sizeof(*v));
                if (!v) return -1;
                p->v = v;
            }
            const ggprof_model_node *node = ggprof_model_rec_node(l, r);
            p->v[p->n] = (part) { r->layer, r->type, r->name, r->node,
                                  ggprof_block_of(r->type, l->names[r->name], node ? node->tensor_name : NULL), 0, 0 };
            *slot = (uint32_t) ++p->n;
        }
        part *x = &p->v[*slot - 1];
        x->count++;
        x->ns = ggprof_ns_add(x->ns, r->duration_ns);
    }
    return 0;
}

/* The records, a graph at a time, summed per (layer, type, name, node): memory grows with the model. */
static int parts_load(sqlite3 *db, ggprof_model *l, parts *p, char *why, size_t why_len) {
    memset(p, 0, sizeof(*p));
    parts_pass pp = { p, { 0 }, 0 };
    int rc = ggprof_model_each(db, l, 0, "rollup: reading", parts_add, &pp, why, why_len);
    ggprof_index_free(&pp.index);
    if (rc != 0) return -1;
    p->op_ns = l->op_ns;
    p->names = l->names;
    return 0;
}

/* A row of a roll-up: its group's key (layer or block, type, name) and sums. */
typedef struct {
    int32_t     layer, type, min_type;
    const char *block, *name;
    int64_t     count, ops, ns, op_ns, sync_ns, copy_ns, block_ns, layers;
} row;

static int cmp_str(const char *a, const char *b) { /* NULL first, as SQLite orders it */
    if (!a || !b) return (a != NULL) - (b != NULL);
    return strcmp(a, b);
}

static int cmp_layer(int32_t a, int32_t b) { /* NULL (-1) last */
    if (a < 0 || b < 0) return (a < 0) - (b < 0);
    return (a > b) - (a < b);
}

static int cmp_i64_desc(int64_t a, int64_t b) { return (a < b) - (a > b); }

/* Grouping: rows with equal keys are adjacent after this order. */
static int key_layer(const void *a, const void *b) { return cmp_layer(((const row *) a)->layer, ((const row *) b)->layer); }
static int key_layer_op(const void *a, const void *b) {
    const row *x = a, *y = b;
    int c = cmp_layer(x->layer, y->layer);
    if (!c) c = (x->type > y->type) - (x->type < y->type);
    return c ? c : cmp_str(x->name, y->name);
}
static int key_block(const void *a, const void *b) {
    const row *x = a, *y = b;
    int c = strcmp(x->block, y->block);
    return c ? c : cmp_layer(x->layer, y->layer);
}
static int key_block_op(const void *a, const void *b) {
    const row *x = a, *y = b;
    int c = strcmp(x->block, y->block);
    return c ? c : cmp_str(x->name, y->name);
}

/* The views' orders. */
static int order_layer_op(const void *a, const void *b) {
    const row *x = a, *y = b;
    int c = cmp_layer(x->layer, y->layer);
    if (!c) c = (x->type > y->type) - (x->type < y->type);
    if (!c) c = cmp_i64_desc(x->ns, y->ns);
    return c ? c : cmp_str(x->name, y->name);
}
static int order_block(const void *a, const void *b) {
    const row *x = a, *y = b;
    int c = (x->min_type > y->min_type) - (x->min_type < y->min_type);
    if (!c) c = cmp_i64_desc(x->ns, y->ns);
    return c ? c : strcmp(x->block, y->block);
}
static int order_block_op(const void *a, const void *b) {
    const row *x = a, *y = b;
    int c = (x->min_type > y->min_type) - (x->min_type < y->min_type);
    if (!c) c = cmp_i64_desc(x->block_ns, y->block_ns);
    if (!c) c = strcmp(x->block, y->block);
    if (!c) c = cmp_i64_desc(x->ns, y->ns);
    return c ? c : cmp_str(x->name, y->name);
}

/* Sums rows with equal keys (key's order) into the first of each run; returns the rows left. */
static size_t merge(row *v, size_t n, int (*key)(const void *, const void *)) {
    ggprof_sort(v, n, sizeof(*v), key);
    size_t out = 0;
    for (size_t i = 0; i < n;) {
        row acc = v[i];
        size_t j = i + 1;
        for (; j < n && key(&v[i], &v[j]) == 0; j++) {
            acc.count += v[j].count, acc.ops += v[j].ops, acc.layers += v[j].layers;
            acc.ns      = ggprof_ns_add(acc.ns, v[j].ns);
            acc.op_ns   = ggprof_ns_add(acc.op_ns, v[j].op_ns);
            acc.sync_ns = ggprof_ns_add(acc.sync_ns, v[j].sync_ns);
            acc.copy_ns = ggprof_ns_add(acc.copy_ns, v[j].copy_ns);
            if (v[j].min_type < acc.min_type) acc.min_type = v[j].min_type;
        }
        v[out++] = acc;
        i = j;
    }
    return out;
}

static void pct(ggprof_table *t, int64_t ns, int64_t total) {
    if (total) {
        ggprof_table_real(t, 100.0 * (double) ns / (double) total);
    } else {
        ggprof_table_null(t);
    }
}

static void layer_cell(ggprof_table *t, int32_t layer) {
    if (layer < 0) {
        ggprof_table_null(t);
    } else {
        ggprof_table_int(t, layer);
    }
}

static int run_parts(const parts *p, const char *by, int ops, ggprof_table *t) {
    row *v = calloc(p->n ? p->n : 1, sizeof(*v));
    if (!v) return -1;
    int block = strcmp(by, "block") == 0;
    for (size_t i = 0; i < p->n; i++) {
        const part *x = &p->v[i];
        v[i] = (row) { x->layer, x->type, x->type, x->block, p->names[x->name], x->count, x->type == 0 ? x->count : 0,
                       x->ns, x->type == 0 ? x->ns : 0, x->type == 2 ? x->ns : 0, x->type == 1 ? x->ns : 0, 0, 0 };
    }
    size_t n = p->n;
    if (!block && !ops) {
        n = merge(v, n, key_layer);
        for (size_t i = 0; i < n; i++) {
            layer_cell(t, v[i].layer);
            ggprof_table_int(t, v[i].ops);
            ggprof_table_real(t, (double) v[i].op_ns / 1e6);
            pct(t, v[i].op_ns, p->op_ns);
            ggprof_table_real(t, (double) v[i].sync_ns / 1e6);
            ggprof_table_real(t, (double) v[i].copy_ns / 1e6);
        }
    } else if (!block) {
        n = merge(v, n, key_layer_op);
        ggprof_sort(v, n, sizeof(*v), order_layer_op);
        for (size_t i = 0; i < n; i++) {
            layer_cell(t, v[i].layer);
            ggprof_table_text(t, v[i].type == 0 ? "op" : v[i].type == 1 ? "copy" : "sync");
            ggprof_table_text(t, v[i].name);
            ggprof_table_int(t, v[i].count);
            ggprof_table_real(t, (double) v[i].ns / 1e6);
            pct(t, v[i].ns, p->op_ns);
        }
    } else if (!ops) {
        n = merge(v, n, key_block); /* by block and layer first: each block's distinct layers */
        for (size_t i = 0; i < n; i++) {
            v[i].layers = v[i].layer >= 0;
            v[i].layer  = -1;
        }
        n = merge(v, n, key_block);
        ggprof_sort(v, n, sizeof(*v), order_block);
        for (size_t i = 0; i < n; i++) {
            ggprof_table_text(t, v[i].block);
            ggprof_table_int(t, v[i].count);
            ggprof_table_real(t, (double) v[i].ns / 1e6);
            pct(t, v[i].ns, p->op_ns);
            ggprof_table_int(t, v[i].layers);
        }
    } else {
        n = merge(v, n, key_block_op);
        for (size_t i = 0; i < n;) { /* each row's block's time */
            size_t j = i;
            int64_t sum = 0;
            for (; j < n && strcmp(v[j].block, v[i].block) == 0; j++) sum = ggprof_ns_add(sum, v[j].ns);
            for (; i < j; i++) v[i].block_ns = sum;
        }
        ggprof_sort(v, n, sizeof(*v), order_block_op);
        for (size_t i = 0; i < n; i++) {
            ggprof_table_text(t, v[i].block);
            ggprof_table_text(t, v[i].name);
            ggprof_table_int(t, v[i].count);
            ggprof_table_real(t, (double) v[i].ns / 1e6);
            pct(t, v[i].ns, p->op_ns);
        }
    }
    free(v);
    return 0;
}

/* ------------------------------------------------------------ the roll-ups */
/* ------------------------------------------------------------ the roll-ups */

typedef struct {
    const char       *by;
    int               ops; /* --ops */
    const char       *sql; /* NULL: from the one pass (run_parts) */
    const char       *conv; /* per column, see cell_of */
    const ggprof_col *cols;
    size_t            ncol;
} rollup_def;

#define MS(name)  { name, name, "%.3f", 0 }
#define PCT(name) { name, name, "%.2f", 0 }
#define INT(name) { name, name, NULL, 0 }
#define TXT(name) { name, name, NULL, 0 }
static const ggprof_col k_layer_cols[] = { INT("layer"), INT("ops"), MS("op_ms"), PCT("op_pct"), MS("sync_ms"),
                                           MS("copy_ms") };
static const ggprof_col k_layer_op_cols[] = { INT("layer"), TXT("kind"), TXT("name"), INT("count"), MS("time_ms"),
                                              PCT("op_pct") };
static const ggprof_col k_block_cols[] = { TXT("block"), INT("count"), MS("time_ms"), PCT("op_pct"), INT("layers") };
static const ggprof_col k_block_op_cols[] = { TXT("block"), TXT("name"), INT("count"), MS("time_ms"), PCT("op_pct") };
static const ggprof_col k_phase_cols[] = { TXT("phase"), INT("graphs"), INT("tokens"), MS("time_ms"), MS("ms_per_token"),
                                           PCT("tokens_per_s"), MS("op_ms"), MS("sync_ms"), MS("copy_ms") };
static const ggprof_col k_graph_cols[] = { TXT("phase"), INT("graphs"), INT("tokens"), MS("mean_ms"), MS("min_ms"),
                                           MS("median_ms"), MS("p90_ms"), MS("max_ms"), MS("stddev_ms") };
#define NCOL(a) (sizeof(a) / sizeof(a[0]))

static const rollup_def k_rollups[] = {
    { "layer", 0, NULL, NULL, k_layer_cols, NCOL(k_layer_cols) },
    { "layer", 1, NULL, NULL, k_layer_op_cols, NCOL(k_layer_op_cols) },
    { "block", 0, NULL, NULL, k_block_cols, NCOL(k_block_cols) },
    { "block", 1, NULL, NULL, k_block_op_cols, NCOL(k_block_op_cols) },
    { "phase", 0,
      "SELECT phase, graphs, tokens, duration_ns, ns_per_token, 1e9 / ns_per_token, op_ns, sync_ns, copy_ns"
      " FROM phase_time",
      "sddmmpmmm", k_phase_cols, NCOL(k_phase_cols) },
};
#define N_ROLLUPS (sizeof(k_rollups) / sizeof(k_rollups[0]))

static int run_view(sqlite3 *db, const rollup_def *d, ggprof_table *t) {
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, d->sql, -1, &st, NULL) != SQLITE_OK) return -1;
    int step;
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        for (size_t c = 0; c < d->ncol; c++) cell_of(t, st, (int) c, d->conv[c]);
    }
    sqlite3_finalize(st);
    return step == SQLITE_DONE ? 0 : -1;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *) a, y = *(const double *) b;
    return x < y ? -1 : x > y;
}

/* Linear interpolation between the closest ranks (numpy's default), on sorted values. */
static double quantile(const double *v, size_t n, double q) {
    double pos = q * (double) (n - 1);
    size_t lo  = (size_t) pos;
    if (lo + 1 >= n) return v[n - 1];
    return v[lo] + (pos - (double) lo) * (v[lo + 1] - v[lo]);
}

static void graph_row(ggprof_table *t, const char *phase, double *v, size_t n, long long tokens) {
    ggprof_sort(v, n, sizeof(*v), cmp_double);
    double sum = 0, sq = 0;
    for (size_t i = 0; i < n; i++) sum += v[i];
    double mean = sum / (double) n;
    for (size_t i = 0; i < n; i++) sq += (v[i] - mean) * (v[i] - mean);
    ggprof_table_text(t, phase);
    ggprof_table_int(t, (int64_t) n);
    ggprof_table_int(t, tokens);
    ggprof_table_real(t, mean / 1e6);
    ggprof_table_real(t, v[0] / 1e6);
    ggprof_table_real(t, quantile(v, n, 0.5) / 1e6);
    ggprof_table_real(t, quantile(v, n, 0.9) / 1e6);
    ggprof_table_real(t, v[n - 1] / 1e6);
    ggprof_table_real(t, n > 1 ? sqrt(sq / (double) (n - 1)) / 1e6 : NAN);
}

/* Per phase, the distribution of graph latency per token (graph duration / tokens in its batch). */
static int run_graphs(sqlite3 *db, ggprof_table *t) {
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db,
                           "SELECT phase, ns_per_token, n_tokens FROM graph_phase WHERE ns_per_token IS NOT NULL"
                           " ORDER BY CASE phase WHEN 'prompt' THEN 0 WHEN 'generation' THEN 1 ELSE 2 END",
                           -1, &st, NULL) != SQLITE_OK) {
        return -1;
    }
    double *v = NULL;
    size_t n = 0, cap = 0;
    long long tokens = 0;
    char phase[32] = "";
    int step, rc = 0;
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        const char *p = (const char *) sqlite3_column_text(st, 0);
        if (n && strcmp(p, phase) != 0) {
            graph_row(t, phase, v, n, tokens);
            n = 0, tokens = 0;
        }
        snprintf(phase, sizeof(phase), "%s", p);
        if (n == cap) {
            cap      = cap ? cap * 2 : 256;
            double *w = realloc(v, cap * sizeof(*w));
            if (!w) {
                rc = -1;
                break;
            }
            v = w;
        }
        v[n++] = sqlite3_column_double(st, 1);
        tokens += sqlite3_column_int64(st, 2);
    }
    if (n && rc == 0) graph_row(t, phase, v, n, tokens);
    free(v);
    sqlite3_finalize(st);
    return rc == 0 && step == SQLITE_DONE ? 0 : -1;
}

/* ------------------------------------------------------------ requests: llama_decode batches per sequence */

/* Short headings for an 80-column terminal; CSV and JSON use the keys. */
static const ggprof_col k_request_cols[] = {
    { "req", "request", NULL, 0 },           { "pid", "pid", NULL, 0 },
    { "seq", "seq", NULL, 0 },               { "start s", "start_s", "%.3f", 0 },
    { "prompt", "prompt_tokens", NULL, 0 },  { "ms", "prompt_ms", "%.3f", 0 },
    { "gen", "generated", NULL, 0 },         { "ms", "gen_ms", "%.3f", 0 },
    { "ms/tok", "ms_per_token", "%.3f", 0 }, { "seqs", "batch_seqs", "%.2f", 0 },
    { "alone", "alone_ms_per_token", "%.3f", 0 }, { "shared", "shared_ms_per_token", "%.3f", 0 },
};

typedef struct {
    ggprof_table *t;
    int64_t       n, t0; /* n: the requests answered so far */
} request_rows;

/* A row per request the program answered. */
static int request_row(void *ctx, const ggprof_request *q) {
    request_rows *r = ctx;
    ggprof_table *t = r->t;
    if (!ggprof_request_answered(q)) return 0;
    ggprof_table_int(t, ++r->n);
    ggprof_table_int(t, q->pid);
    ggprof_table_int(t, q->seq);
    ggprof_table_real(t, (double) (q->first_ns - r->t0) / 1e9);
    ggprof_table_int(t, q->prompt_tokens);
    ggprof_table_real(t, (double) q->prompt_ns / 1e6);
    ggprof_table_int(t, ggprof_request_generated(q));
    ggprof_table_real(t, (double) q->gen_ns / 1e6);
    ggprof_table_real(t, q->gen_decodes ? (double) q->gen_ns / (double) q->gen_decodes / 1e6 : NAN);
    ggprof_table_real(t, q->gen_decodes ? (double) q->seqs_sum / (double) q->gen_decodes : NAN);
    ggprof_table_real(t, q->alone_n ? (double) q->alone_ns / (double) q->alone_n / 1e6 : NAN);
    ggprof_table_real(t, q->shared_n ? (double) q->shared_ns / (double) q->shared_n / 1e6 : NAN);
    return 0;
}

/* The requests of schema/requests.c's rule (walked by request_time.c), the ones the program answered. Times are the
 * batches' whole llama_decode wall time (a batch shared with other sequences counts for each). */
static int run_requests(sqlite3 *db, ggprof_table *t, char *why, size_t why_len) {
    request_rows rows = { t, 0, 0 };
    sqlite3_stmt *first = NULL;
    if (sqlite3_prepare_v2(db, "SELECT min(start_ns) FROM batches", -1, &first, NULL) == SQLITE_OK &&
        sqlite3_step(first) == SQLITE_ROW) {
        rows.t0 = sqlite3_column_int64(first, 0);
    }
    sqlite3_finalize(first);
    ggprof_request_walker w = { NULL, request_row, &rows };
    return ggprof_requests_walk(db, -1, &w, why, why_len) == 0 ? 0 : -1;
}

int ggprof_cmd_rollup(int argc, char **argv) {
    const char *trace = NULL, *by = NULL, *format = "table";
    int ops = 0;
    ggprof_window_opts window = { 0 };
    const ggprof_opt opts[] = {
        { "--by", NULL, GGPROF_OPT_STRING, &by, NULL, "layer|block|phase|graph|request",
          "what the records are rolled up by (above)" },
        { "--ops", NULL, GGPROF_OPT_FLAG, &ops, NULL, NULL,
          "with --by layer or block: a row per op (and per sync or copy kind) in each layer or block" },
        { "--format", NULL, GGPROF_OPT_STRING, &format, NULL, "table|csv|json",
          "table (default), csv or json (an array of objects; '-' in a table is null)" },
    };
    ggprof_args a = { opts, 3, &trace, 1, 0, "one trace at a time ('%s' is a second)", 0, 0, &window };
    int bad = ggprof_parse_args(argc, argv, &a);
    if (bad) return bad;
    if (!trace) return ggprof_fail(GGPROF_EXIT_USAGE, "no trace given; usage: ggprof rollup TRACE --by layer|block|phase|graph");
    if (!by) return ggprof_fail(GGPROF_EXIT_USAGE, "no --by given; expected --by layer, block, phase, graph or request");
    ggprof_format fmt;
    if (ggprof_format_parse(format, &fmt) != 0) {
        return ggprof_fail(GGPROF_EXIT_USAGE, "unknown format '%s'; expected table, csv or json", format);
    }
    const rollup_def *d = NULL;
    for (size_t i = 0; i < N_ROLLUPS && !d; i++) {
        if (strcmp(k_rollups[i].by, by) == 0 && k_rollups[i].ops == ops) d = &k_rollups[i];
    }
    int is_graph = strcmp(by, "graph") == 0, is_request = strcmp(by, "request") == 0;
    if (is_request) {
        if (ops) return ggprof_fail(GGPROF_EXIT_USAGE, "--ops goes with --by layer or block");
        sqlite3 *db;
        char why[512];
        int rc = ggprof_trace_open_window(trace, &window, &db, why, sizeof(why));
        if (rc) return ggprof_fail(rc, "%s", why);
        ggprof_table t;
        ggprof_table_init(&t, k_request_cols, NCOL(k_request_cols));
        ggprof_table_coverage(&t, db);
        if (run_requests(db, &t, why, sizeof(why)) != 0) {
            rc = ggprof_fail(GGPROF_EXIT_USAGE, "'%s': %s", trace, why);
        } else if (ggprof_table_write(&t, fmt, stdout, 80) != 0 || fflush(stdout) != 0) {
            rc = ggprof_fail(GGPROF_EXIT_INTERNAL, "cannot write the output");
        }
        ggprof_table_free(&t);
        sqlite3_close(db);
        return rc;
    }
    if (!d && !is_graph) {
        if (strcmp(by, "phase") == 0) return ggprof_fail(GGPROF_EXIT_USAGE, "--ops goes with --by layer or block");
        return ggprof_fail(GGPROF_EXIT_USAGE, "unknown --by '%s'; expected layer, block, phase, graph or request", by);
    }
    if (is_graph && ops) return ggprof_fail(GGPROF_EXIT_USAGE, "--ops goes with --by layer or block");

    sqlite3 *db;
    char why[512];
    int rc = ggprof_trace_open_window(trace, &window, &db, why, sizeof(why));
    if (rc) return ggprof_fail(rc, "%s", why);
    if (ggprof_views_create(db) != SQLITE_OK) {
        rc = ggprof_fail(GGPROF_EXIT_INTERNAL, "creating the roll-up views on '%s': %s", trace, sqlite3_errmsg(db));
        sqlite3_close(db);
        return rc;
    }
    ggprof_table t;
    ggprof_table_init(&t, is_graph ? k_graph_cols : d->cols, is_graph ? NCOL(k_graph_cols) : d->ncol);
    ggprof_table_coverage(&t, db);
    int got;
    if (!is_graph && !d->sql) {
        ggprof_model l;
        parts p;
        got = parts_load(db, &l, &p, why, sizeof(why));
        if (got == 0 && (got = run_parts(&p, by, ops, &t)) != 0) snprintf(why, sizeof(why), "out of memory");
        free(p.v);
        ggprof_model_free(&l);
    } else {
        got = is_graph ? run_graphs(db, &t) : run_view(db, d, &t);
        if (got != 0) snprintf(why, sizeof(why), "%s", sqlite3_errmsg(db));
    }
    if (got != 0) {
        rc = ggprof_fail(GGPROF_EXIT_INTERNAL, "reading '%s': %s", trace, why);
    } else if (ggprof_table_write(&t, fmt, stdout, 80) != 0 || fflush(stdout) != 0) {
        rc = ggprof_fail(GGPROF_EXIT_INTERNAL, "cannot write the output");
    }
    ggprof_table_free(&t);
    sqlite3_close(db);
    return rc;
}
