/* Every record's layer and every graph's phase in one pass (see model.h). SQLite's window over a million
 * records, with two joins per row, cost 4-5 s (docs/analysis.md, "Speed"); here the records are read once in
 * file order, sorted per graph in C, and each node's layer is worked out once. */
#include "model.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hash.h"
#include "progress.h"
#include "trace_db.h"
#include "sort.h"
#include "layer_rule.h"

/* ------------------------------------------------------------ interning and lookups */

static uint64_t name_hash(const void *ctx, size_t i) { return ggprof_fnv_str(((const ggprof_model *) ctx)->names[i]); }

static int same_name(const void *ctx, size_t i, const void *key) {
    return strcmp(((const ggprof_model *) ctx)->names[i], key) == 0;
}

typedef struct {
    int32_t pid;
    int64_t node_id;
} node_ref;

static uint64_t node_hash(const void *ctx, size_t i) {
    const ggprof_model_node *n = &((const ggprof_model *) ctx)->nodes[i];
    return ggprof_fnv_pid_id(n->pid, n->node_id);
}

static int same_node(const void *ctx, size_t i, const void *key) {
    const ggprof_model_node *n = &((const ggprof_model *) ctx)->nodes[i];
    const node_ref     *k = key;
    return n->pid == k->pid && n->node_id == k->node_id;
}

/* The id of name (0 for NULL), added when new. Returns UINT32_MAX when out of memory. */
static uint32_t intern(ggprof_model *l, ggprof_index *x, const char *name) {
    if (!name) return 0;
    if (ggprof_index_reserve(x, 1, l->n_names, name_hash, l) != 0) return UINT32_MAX;
    uint32_t *slot = ggprof_index_slot(x, ggprof_fnv_str(name), same_name, l, name);
    if (*slot) return *slot - 1;
    if ((l->n_names & (l->n_names - 1)) == 0) { /* a power of two: full */
        char **v = realloc(l->names, l->n_names * 2 * sizeof(*v));
        if (!v) return UINT32_MAX;
        l->names = v;
    }
    if (!(l->names[l->n_names] = strdup(name))) return UINT32_MAX;
    *slot = (uint32_t) ++l->n_names;
    return (uint32_t) l->n_names - 1;
}

/* The node (index + 1) of (pid, node_id); 0 when the trace has none. */
static uint32_t node_find(const ggprof_model *l, const ggprof_index *x, int32_t pid, int64_t node_id) {
    if (!x->n_slot || node_id == GGPROF_MODEL_NULL) return 0;
    node_ref k = { pid, node_id };
    return *ggprof_index_slot(x, ggprof_fnv_pid_id(pid, node_id), same_node, l, &k);
}

static char *dup_col(sqlite3_stmt *st, int i) {
    const char *s = (const char *) sqlite3_column_text(st, i);
    return s ? strdup(s) : NULL;
}

static int64_t int_or_null(sqlite3_stmt *st, int i) {
    return sqlite3_column_type(st, i) == SQLITE_NULL ? GGPROF_MODEL_NULL : sqlite3_column_int64(st, i);
}

/* "node_[0-9]*" and "leaf_[0-9]*": ggml's names for tensors nobody named. */
static int unnamed(const char *s) {
    return (strncmp(s, "node_", 5) == 0 || strncmp(s, "leaf_", 5) == 0) && s[5] >= '0' && s[5] <= '9';
}

static int load_nodes(sqlite3 *db, ggprof_model *l, ggprof_index *m) {
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, "SELECT pid, node_id, tensor_name, sub_op, sub_op_name, ne, ne_src, type_src, op, out_type,"
                               " n_src, nb_src, op_params FROM nodes",
                           -1, &st, NULL) != SQLITE_OK) {
        return -1;
    }
    size_t cap = 0;
    int step;
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        int32_t pid = sqlite3_column_int(st, 0);
        int64_t id  = int_or_null(st, 1);
        if (id == GGPROF_MODEL_NULL || node_find(l, m, pid, id)) continue; /* a join would never match it */
        if (ggprof_index_reserve(m, 0, l->n_nodes, node_hash, l) != 0) break;
        if (l->n_nodes == cap) {
            cap             = cap ? cap * 2 : 256;
            ggprof_model_node *v = realloc(l->nodes, cap * sizeof(*v));
            if (!v) break;
            l->nodes = v;
        }
        ggprof_model_node *n = &l->nodes[l->n_nodes];
        memset(n, 0, sizeof(*n));
        n->pid = pid, n->node_id = id;
        n->sub_op      = sqlite3_column_type(st, 3) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, 3);
        n->tensor_name = dup_col(st, 2);
        n->sub_op_name = dup_col(st, 4);
        n->ne_src      = dup_col(st, 6);
        n->type_src    = dup_col(st, 7);
        n->op          = dup_col(st, 8);
        n->ne          = dup_col(st, 5);
        n->out_type    = sqlite3_column_type(st, 9) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, 9);
        n->n_src       = sqlite3_column_int64(st, 10);
        n->nb_src      = dup_col(st, 11);
        n->op_params   = dup_col(st, 12);
        l->n_nodes++;
        n->own_layer = ggprof_layer_of(n->tensor_name);
        n->anchor    = n->tensor_name && *n->tensor_name && !unnamed(n->tensor_name);
        int64_t ne[4], ne_src[2][4]; /* shapes are 4 numbers each (schema/trace_db.h) */
        n->has_rows     = ggprof_db_ints(n->ne, ne, 4) > 1;
        n->rows         = n->has_rows ? ne[1] : 0;
        n->has_src_rows = ggprof_db_ints(n->ne_src, &ne_src[0][0], 8) > 5;
        n->src_rows     = n->has_src_rows ? ne_src[1][1] : 0;
        node_ref k = { pid, id };
        *ggprof_index_slot(m, ggprof_fnv_pid_id(pid, id), same_node, l, &k) = (uint32_t) l->n_nodes;
    }
    sqlite3_finalize(st);
    return step == SQLITE_DONE ? 0 : -1;
}

static int load_backends(sqlite3 *db, ggprof_model *l) {
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, "SELECT pid, sched_id, id, name FROM backend_list", -1, &st, NULL) != SQLITE_OK) return -1;
    size_t cap = 0;
    int step;
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        if (l->n_backends == cap) {
            cap                = cap ? cap * 2 : 16;
            ggprof_model_backend *v = realloc(l->backends, cap * sizeof(*v));
            if (!v) break;
            l->backends = v;
        }
        ggprof_model_backend *b = &l->backends[l->n_backends++];
        b->pid = sqlite3_column_int(st, 0), b->sched_id = sqlite3_column_int64(st, 1), b->id = sqlite3_column_int(st, 2);
        b->name = dup_col(st, 3);
    }
    sqlite3_finalize(st);
    return step == SQLITE_DONE ? 0 : -1;
}

static int load_types(sqlite3 *db, ggprof_model *l) {
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, "SELECT pid, type, name FROM ggml_types", -1, &st, NULL) != SQLITE_OK) return -1;
    size_t cap = 0;
    int step;
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        if (l->n_types == cap) {
            cap                  = cap ? cap * 2 : 64;
            ggprof_model_type *v = realloc(l->types, cap * sizeof(*v));
            if (!v) break;
            l->types = v;
        }
        ggprof_model_type *t = &l->types[l->n_types++];
        const char *n        = (const char *) sqlite3_column_text(st, 2);
        t->pid = sqlite3_column_int(st, 0), t->type = sqlite3_column_int64(st, 1);
        snprintf(t->name, sizeof(t->name), "%s", n ? n : "");
    }
    sqlite3_finalize(st);
    return step == SQLITE_DONE ? 0 : -1;
}

static int load_splits(sqlite3 *db, ggprof_model *l) {
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, "SELECT pid, sched_id, backend_id, graph_id, split_id, start_ns, duration_ns, n_nodes,"
                               " ticks_matched, n_ticks, n_expected, engine_ns FROM split_list", -1, &st, NULL) != SQLITE_OK) {
        return -1;
    }
    size_t cap = 0;
    int step;
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        if (l->n_splits == cap) {
            cap              = cap ? cap * 2 : 64;
            ggprof_model_split *v = realloc(l->splits, cap * sizeof(*v));
            if (!v) break;
            l->splits = v;
        }
        ggprof_model_split *x = &l->splits[l->n_splits++];
        x->pid = sqlite3_column_int(st, 0), x->sched_id = sqlite3_column_int64(st, 1);
        x->backend_id = sqlite3_column_int(st, 2), x->graph_id = int_or_null(st, 3);
        x->split_id = sqlite3_column_int64(st, 4), x->start_ns = sqlite3_column_int64(st, 5);
        x->duration_ns = sqlite3_column_int64(st, 6), x->n_nodes = sqlite3_column_int64(st, 7);
        x->ticks_matched = int_or_null(st, 8), x->n_ticks = sqlite3_column_int64(st, 9);
        x->n_expected = sqlite3_column_int64(st, 10), x->engine_ns = sqlite3_column_int64(st, 11);
    }
    sqlite3_finalize(st);
    return step == SQLITE_DONE ? 0 : -1;
}

size_t ggprof_model_scheds(const ggprof_model *l, int32_t pid) {
    int64_t seen[64];
    size_t n = 0;
    for (size_t i = 0; i < l->n_rec + l->n_splits; i++) {
        int64_t s;
        if (i < l->n_rec) {
            if (l->rec[i].pid != pid || l->rec[i].type == 1) continue;
            s = l->rec[i].sched_id;
        } else {
            if (l->splits[i - l->n_rec].pid != pid) continue;
            s = l->splits[i - l->n_rec].sched_id;
        }
        size_t k = 0;
        while (k < n && seen[k] != s) k++;
        if (k == n && n < sizeof(seen) / sizeof(seen[0])) seen[n++] = s;
    }
    return n;
}

int64_t ggprof_model_t0(const ggprof_model *l) {
    int64_t t0 = INT64_MAX;
    for (size_t i = 0; i < l->n_rec; i++) {
        if (l->rec[i].start_ns < t0) t0 = l->rec[i].start_ns;
    }
    for (size_t i = 0; i < l->n_splits; i++) {
        if (l->splits[i].start_ns < t0) t0 = l->splits[i].start_ns;
    }
    for (size_t i = 0; i < l->n_graphs; i++) {
        if (l->graphs[i].start_ns < t0) t0 = l->graphs[i].start_ns;
    }
    return t0 == INT64_MAX ? 0 : t0;
}

const char *ggprof_model_rec_tensor(const ggprof_model *l, const ggprof_model_rec *r) {
    const ggprof_model_node *n = ggprof_model_rec_node(l, r);
    return n && n->tensor_name && *n->tensor_name ? n->tensor_name : NULL;
}

const char *ggprof_model_rec_ne(const ggprof_model *l, const ggprof_model_rec *r) {
    const ggprof_model_node *n = ggprof_model_rec_node(l, r);
    return n && n->ne ? n->ne : "[0, 0, 0, 0]";
}

const char *ggprof_model_rec_ne_src(const ggprof_model *l, const ggprof_model_rec *r) {
    const ggprof_model_node *n = ggprof_model_rec_node(l, r);
    return n && n->ne_src ? n->ne_src : "[]";
}

const char *ggprof_model_rec_type_src(const ggprof_model *l, const ggprof_model_rec *r) {
    const ggprof_model_node *n = ggprof_model_rec_node(l, r);
    return n && n->type_src ? n->type_src : "[]";
}

int64_t ggprof_model_rec_out_type(const ggprof_model *l, const ggprof_model_rec *r) {
    const ggprof_model_node *n = ggprof_model_rec_node(l, r);
    return n ? n->out_type : -1;
}

const char *ggprof_model_rec_extra(const ggprof_model *l, const ggprof_model_rec *r, char *buf, size_t len) {
    if (r->extra) return l->names[r->extra];
    const ggprof_model_node *n = ggprof_model_rec_node(l, r);
    if (r->type == 0 && r->fused && n) return ggprof_fused_label(buf, len, NULL, n->op, l->nodes[r->fused - 1].op);
    return r->type == 1 ? ggprof_model_rec_tensor(l, r) : NULL;
}

const char *ggprof_model_backend_name(const ggprof_model *l, int32_t pid, int64_t sched_id, int32_t id) {
    for (size_t i = 0; i < l->n_backends; i++) {
        const ggprof_model_backend *b = &l->backends[i];
        if (b->pid == pid && b->sched_id == sched_id && b->id == id) return b->name;
    }
    return NULL;
}

const char *ggprof_backend_label(const char *name, int64_t id, char *buf, size_t len) {
    if (name && *name) return name;
    snprintf(buf, len, id < 0 ? "no backend" : "backend %" PRId64, id);
    return buf;
}

const char *ggprof_type_label(const char *name, int64_t type, char *buf, size_t len) {
    if (name && *name) return name;
    snprintf(buf, len, "type %" PRId64, type);
    return buf;
}

const char *ggprof_model_backend_label(const ggprof_model *l, int32_t pid, int64_t sched_id, int64_t id, char *buf, size_t len) {
    const char *name = id >= INT32_MIN && id <= INT32_MAX ? ggprof_model_backend_name(l, pid, sched_id, (int32_t) id) : NULL;
    return ggprof_backend_label(name, id, buf, len);
}

const char *ggprof_model_type_name(const ggprof_model *l, int32_t pid, int64_t type, char *buf, size_t len) {
    for (size_t i = 0; i < l->n_types; i++)
        if (l->types[i].pid == pid && l->types[i].type == type) return ggprof_type_label(l->types[i].name, type, buf, len);
    for (size_t i = 0; i < l->n_types; i++)
        if (l->types[i].type == type) return ggprof_type_label(l->types[i].name, type, buf, len);
    return ggprof_type_label(NULL, type, buf, len);
}

/* The SQL side of the two labels: NULL when the id is NULL and the name missing (as 'backend ' || NULL was). */
static void sql_label(sqlite3_context *ctx, sqlite3_value **argv,
                      const char *(*label)(const char *, int64_t, char *, size_t)) {
    const char *name = (const char *) sqlite3_value_text(argv[0]);
    if (!(name && *name) && sqlite3_value_type(argv[1]) == SQLITE_NULL) {
        sqlite3_result_null(ctx);
        return;
    }
    char buf[48];
    sqlite3_result_text(ctx, label(name, sqlite3_value_int64(argv[1]), buf, sizeof(buf)), -1, SQLITE_TRANSIENT);
}

static void fn_backend_label(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
    (void) argc;
    sql_label(ctx, argv, ggprof_backend_label);
}

static void fn_type_label(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
    (void) argc;
    sql_label(ctx, argv, ggprof_type_label);
}

int ggprof_labels_register(sqlite3 *db) {
    int flags = SQLITE_UTF8 | SQLITE_DETERMINISTIC;
    int rc    = sqlite3_create_function(db, "ggprof_backend_label", 2, flags, NULL, fn_backend_label, NULL, NULL);
    if (rc == SQLITE_OK) rc = sqlite3_create_function(db, "ggprof_type_label", 2, flags, NULL, fn_type_label, NULL, NULL);
    return rc;
}

/* ------------------------------------------------------------ records */

static int cmp_rec(const void *a, const void *b) {
    const ggprof_model_rec *x = a, *y = b;
    if (x->pid != y->pid) return x->pid < y->pid ? -1 : 1;
    if (x->graph_id != y->graph_id) return x->graph_id < y->graph_id ? -1 : 1;
    if (x->start_ns != y->start_ns) return x->start_ns < y->start_ns ? -1 : 1;
    return (x->seq > y->seq) - (x->seq < y->seq);
}

/* ------------------------------------------------------------ the pass */

/* Each graph's sums and tokens, in the records' order (by process, graph). */
typedef struct {
    int32_t pid;
    int64_t graph_id, min_sched, min_start, max_end;
    int64_t op_ns, sync_ns, copy_ns;
    int     has_tokens;
    int64_t n_tokens;
} graph_stats;

/* A record's layer: its tensor's own when it has one; else, for an OP record of an unnamed tensor (ggml's
 * node_N, e.g. llama.cpp's FLASH_ATTN_EXT) and for SYNC, that of the last named OP before it in its graph (a
 * named op whose name has no layer passes none on); a COPY keeps only its own. rec: one graph's records (one
 * process and graph id), in the pass's order; g gets their sums and tokens. */
static void pass(const ggprof_model *l, ggprof_model_rec *rec, size_t n, uint32_t getrows, uint32_t mulmat, graph_stats *g) {
    int carry = -1;
    memset(g, 0, sizeof(*g));
    g->pid = rec[0].pid, g->graph_id = rec[0].graph_id;
    g->min_sched = INT64_MAX, g->min_start = INT64_MAX, g->max_end = INT64_MIN;
    const ggprof_model_rec *first_rows = NULL; /* the graph's first GET_ROWS by node index */
    int     has_mm = 0;
    int64_t mm     = 0;
    for (size_t j = 0; j < n; j++) {
        ggprof_model_rec *r        = &rec[j];
        const ggprof_model_node *nd = ggprof_model_rec_node(l, r);
        int own    = nd ? nd->own_layer : -1;
        int anchor = r->type == 0 && nd && nd->anchor;
        if (anchor) carry = own;
        r->layer = own >= 0 ? own : (anchor || r->type == 1) ? -1 : carry;
        if (r->sched_id < g->min_sched) g->min_sched = r->sched_id;
        if (r->start_ns < g->min_start) g->min_start = r->start_ns;
        int64_t end = ggprof_ns_add(r->start_ns, r->duration_ns);
        if (end > g->max_end) g->max_end = end;
        if (r->type == 0) g->op_ns = ggprof_ns_add(g->op_ns, r->duration_ns);
        if (r->type == 1) g->copy_ns = ggprof_ns_add(g->copy_ns, r->duration_ns);
        if (r->type == 2) g->sync_ns = ggprof_ns_add(g->sync_ns, r->duration_ns);
        /* By node index, a NULL one first (GGPROF_MODEL_NULL is the least), the first record of ties. */
        if (r->type == 0 && nd && getrows && r->name == getrows &&
            (!first_rows || r->node_index < first_rows->node_index)) {
            first_rows = r;
        }
        if (r->type == 0 && nd && mulmat && r->name == mulmat && nd->has_src_rows && (!has_mm || nd->src_rows > mm)) {
            has_mm = 1;
            mm     = nd->src_rows;
        }
    }
    /* Tokens in the batch: the rows of the first GET_ROWS (llama.cpp's token embedding lookup), else the
     * widest MUL_MAT input. */
    const ggprof_model_node *fr = first_rows ? ggprof_model_rec_node(l, first_rows) : NULL;
    if (fr && fr->has_rows) {
        g->has_tokens = 1;
        g->n_tokens   = fr->rows;
    } else if (has_mm) {
        g->has_tokens = 1;
        g->n_tokens   = mm;
    }
}

static const graph_stats *stats_find(const graph_stats *gs, size_t n, int32_t pid, int64_t graph_id) {
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (gs[mid].pid < pid || (gs[mid].pid == pid && gs[mid].graph_id < graph_id)) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return lo < n && gs[lo].pid == pid && gs[lo].graph_id == graph_id ? &gs[lo] : NULL;
}

typedef struct {
    ggprof_model_graph g;
    size_t        order; /* the list's order, for ties */
} graph_row;

static int cmp_graph(const void *a, const void *b) {
    const graph_row *x = a, *y = b;
    if (x->g.pid != y->g.pid) return x->g.pid < y->g.pid ? -1 : 1;
    if (x->g.start_ns != y->g.start_ns) return x->g.start_ns < y->g.start_ns ? -1 : 1;
    if (x->g.graph_id != y->g.graph_id) return x->g.graph_id < y->g.graph_id ? -1 : 1;
    return (x->order > y->order) - (x->order < y->order);
}

static void graph_fill(ggprof_model_graph *g, const graph_stats *s) {
    if (s) {
        g->op_ns = s->op_ns, g->sync_ns = s->sync_ns, g->copy_ns = s->copy_ns;
        g->has_tokens = s->has_tokens, g->n_tokens = s->n_tokens;
    }
    g->phase = !g->has_tokens ? "unknown" : g->n_tokens <= 1 ? "generation" : "prompt";
}

/* The graphs: the graph list's rows, or (a trace imported from JSON has no list) each graph's span of records. */
static int load_graphs(sqlite3 *db, ggprof_model *l, const graph_stats *gs, size_t n_gs) {
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, "SELECT pid, graph_id, sched_id, start_ns, duration_ns FROM graph_list", -1, &st, NULL) !=
        SQLITE_OK) {
        return -1;
    }
    graph_row *v = NULL;
    size_t n = 0, cap = 0;
    int step;
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        if (n == cap) {
            cap          = cap ? cap * 2 : 256;
            graph_row *w = realloc(v, cap * sizeof(*w));
            if (!w) break;
            v = w;
        }
        graph_row *r = &v[n];
        memset(r, 0, sizeof(*r));
        r->order = n++;
        r->g.pid = sqlite3_column_int(st, 0), r->g.graph_id = int_or_null(st, 1);
        r->g.sched_id = sqlite3_column_int64(st, 2), r->g.start_ns = sqlite3_column_int64(st, 3);
        r->g.duration_ns = sqlite3_column_int64(st, 4);
        graph_fill(&r->g, r->g.graph_id == GGPROF_MODEL_NULL ? NULL : stats_find(gs, n_gs, r->g.pid, r->g.graph_id));
    }
    sqlite3_finalize(st);
    if (step != SQLITE_DONE) {
        free(v);
        return -1;
    }
    if (n == 0 && n_gs) {
        if (!(v = malloc(n_gs * sizeof(*v)))) return -1;
        for (; n < n_gs; n++) {
            graph_row *r = &v[n];
            memset(r, 0, sizeof(*r));
            r->order = n;
            r->g.pid = gs[n].pid, r->g.graph_id = gs[n].graph_id, r->g.sched_id = gs[n].min_sched;
            r->g.start_ns = gs[n].min_start, r->g.duration_ns = (int64_t) ((uint64_t) gs[n].max_end - (uint64_t) gs[n].min_start);
            graph_fill(&r->g, &gs[n]);
        }
    }
    ggprof_sort(v, n, sizeof(*v), cmp_graph);
    if (n && !(l->graphs = malloc(n * sizeof(*l->graphs)))) {
        free(v);
        return -1;
    }
    for (size_t i = 0; i < n; i++) l->graphs[i] = v[i].g;
    l->n_graphs = n;
    free(v);
    return 0;
}

/* ------------------------------------------------------------ the records, one graph at a time */

typedef struct {
    int32_t pid;
    int64_t graph_id;
} graph_key;

static int cmp_key(const void *a, const void *b) {
    const graph_key *x = a, *y = b;
    if (x->pid != y->pid) return x->pid < y->pid ? -1 : 1;
    return (x->graph_id > y->graph_id) - (x->graph_id < y->graph_id);
}

/* What the records' pass keeps: each graph's sums (per graph, not per record), the graph list's keys (a
 * consumer is told a listed graph's phase), the records of the graph being read. */
typedef struct {
    ggprof_model   *l;
    ggprof_index    *names;
    const ggprof_index *nodes;
    ggprof_model_fn fn;
    void            *ctx;
    graph_stats     *gs;
    size_t           n_gs, cap_gs;
    graph_key       *list;
    size_t           n_list;
    ggprof_model_rec     *chunk;
    size_t           n_chunk, cap_chunk;
    uint32_t         getrows, mulmat;
} stream;

static int load_list_keys(sqlite3 *db, stream *s) {
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, "SELECT pid, graph_id FROM graph_list", -1, &st, NULL) != SQLITE_OK) return -1;
    size_t cap = 0;
    int step;
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        if (s->n_list == cap) {
            cap          = cap ? cap * 2 : 256;
            graph_key *v = realloc(s->list, cap * sizeof(*v));
            if (!v) break;
            s->list = v;
        }
        s->list[s->n_list++] = (graph_key) { sqlite3_column_int(st, 0), int_or_null(st, 1) };
    }
    sqlite3_finalize(st);
    ggprof_sort(s->list, s->n_list, sizeof(*s->list), cmp_key);
    return step == SQLITE_DONE ? 0 : -1;
}

static int listed(const stream *s, int32_t pid, int64_t graph_id) {
    graph_key k = { pid, graph_id };
    return bsearch(&k, s->list, s->n_list, sizeof(*s->list), cmp_key) != NULL;
}

static uint32_t name_id(const ggprof_model *l, const char *name) {
    for (size_t i = 1; i < l->n_names; i++) {
        if (strcmp(l->names[i], name) == 0) return (uint32_t) i;
    }
    return 0;
}

/* The graph read: its layers and sums, then the consumer. */
static int flush(stream *s) {
    if (!s->n_chunk) return 0;
    ggprof_model *l = s->l;
    ggprof_model_rec   *v = s->chunk;
    size_t         n = s->n_chunk;
    s->n_chunk       = 0;
    for (size_t i = 1; i < n; i++) {
        if (cmp_rec(&v[i - 1], &v[i]) > 0) {
            ggprof_sort(v, n, sizeof(*v), cmp_rec);
            break;
        }
    }
    if (!s->getrows) s->getrows = name_id(l, "GET_ROWS");
    if (!s->mulmat) s->mulmat = name_id(l, "MUL_MAT");
    if (s->n_gs == s->cap_gs) {
        s->cap_gs      = s->cap_gs ? s->cap_gs * 2 : 256;
        graph_stats *w = realloc(s->gs, s->cap_gs * sizeof(*w));
        if (!w) return -1;
        s->gs = w;
    }
    graph_stats *g = &s->gs[s->n_gs];
    pass(l, v, n, s->getrows, s->mulmat, g);
    ggprof_model_graph lg, *shown = NULL;
    if (g->graph_id != GGPROF_MODEL_NULL) {
        s->n_gs++; /* records of no graph have a layer, not a graph */
        if (!s->n_list || listed(s, g->pid, g->graph_id)) {
            memset(&lg, 0, sizeof(lg));
            lg.pid = g->pid, lg.graph_id = g->graph_id;
            graph_fill(&lg, g);
            shown = &lg;
        }
    }
    return s->fn(s->ctx, l, v, n, shown);
}

/* 1 when the records' file order is the pass's (by process, then graph, NULL first), as a recording writes
 * them: then one graph's records are read at a time; 0 when not (SQLite sorts them), -1 on an error. *n gets
 * the count. */
static int in_graph_order(sqlite3 *db, int64_t *n) {
    sqlite3_stmt *st = NULL;
    /* (ORDER BY rowid: else SQLite reads the two columns from the index on them, in their order) */
    if (sqlite3_prepare_v2(db, "SELECT pid, graph_id FROM events ORDER BY rowid", -1, &st, NULL) != SQLITE_OK) return -1;
    int       ordered = 1, step;
    graph_key last    = { INT32_MIN, GGPROF_MODEL_NULL };
    *n                = 0;
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        graph_key k = { sqlite3_column_int(st, 0), int_or_null(st, 1) };
        if (cmp_key(&last, &k) > 0) ordered = 0;
        last = k;
        ++*n;
    }
    sqlite3_finalize(st);
    return step == SQLITE_DONE ? ordered : -1;
}

static int stream_records(sqlite3 *db, stream *s, int what, const char *label) {
    ggprof_model *l = s->l;
    int64_t total    = 0;
    int ordered      = in_graph_order(db, &total);
    if (ordered < 0) return -1;
    int  all = what & GGPROF_MODEL_EXPORT;
    char sql[512];
    snprintf(sql, sizeof(sql), "SELECT rowid, pid, graph_id, type, name, node_id, sched_id, backend_id, start_ns, duration_ns,"
                               " node_index%s FROM events%s",
             all ? ", tid, split_id, bytes, wait_ns, timing, extra, fused_node_id" : "",
             ordered ? " ORDER BY rowid" : " ORDER BY pid, graph_id, start_ns, rowid");
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) return -1;
    ggprof_progress prog;
    if (label) {
        ggprof_progress_start(&prog, label, total > 0 ? (uint64_t) total : 0);
        ggprof_progress_update(&prog, 0);
    }
    int step, rc = 0;
    uint64_t done = 0;
    while (rc == 0 && (step = sqlite3_step(st)) == SQLITE_ROW) {
        int32_t pid   = sqlite3_column_int(st, 1);
        int64_t graph = int_or_null(st, 2);
        if (s->n_chunk && (s->chunk[0].pid != pid || s->chunk[0].graph_id != graph) && (rc = flush(s)) != 0) break;
        if (s->n_chunk == s->cap_chunk) {
            s->cap_chunk   = s->cap_chunk ? s->cap_chunk * 2 : 4096;
            ggprof_model_rec *v = realloc(s->chunk, s->cap_chunk * sizeof(*v));
            if (!v) {
                rc = -1;
                break;
            }
            s->chunk = v;
        }
        ggprof_model_rec *r = &s->chunk[s->n_chunk];
        r->seq         = sqlite3_column_int64(st, 0);
        r->pid         = pid;
        r->graph_id    = graph;
        r->type        = sqlite3_column_int(st, 3);
        r->name        = intern(l, s->names, (const char *) sqlite3_column_text(st, 4));
        r->node_id     = int_or_null(st, 5);
        r->sched_id    = sqlite3_column_int64(st, 6);
        r->backend_id  = sqlite3_column_int(st, 7);
        r->start_ns    = sqlite3_column_int64(st, 8);
        r->duration_ns = sqlite3_column_int64(st, 9);
        r->node_index  = int_or_null(st, 10);
        r->node        = node_find(l, s->nodes, r->pid, r->node_id);
        if (all) {
            r->tid        = sqlite3_column_int64(st, 11);
            r->split_id   = sqlite3_column_int64(st, 12);
            r->bytes      = sqlite3_column_int64(st, 13);
            r->wait_ns    = sqlite3_column_int64(st, 14);
            r->timing     = sqlite3_column_int(st, 15);
            r->extra      = intern(l, s->names, (const char *) sqlite3_column_text(st, 16));
            int64_t fused = int_or_null(st, 17);
            r->fused      = fused > 0 ? node_find(l, s->nodes, r->pid, fused) : 0;
        } else {
            r->tid = r->split_id = r->bytes = r->wait_ns = 0;
            r->timing = 0, r->extra = 0, r->fused = 0;
        }
        r->layer = -1;
        if (r->name == UINT32_MAX || r->extra == UINT32_MAX) {
            rc = -1;
            break;
        }
        if (r->type == 0) l->op_ns = ggprof_ns_add(l->op_ns, r->duration_ns);
        s->n_chunk++;
        if (label && (++done & 0xffff) == 0) ggprof_progress_update(&prog, done);
    }
    if (rc == 0 && step != SQLITE_DONE) rc = -1;
    if (rc == 0) rc = flush(s);
    if (label) ggprof_progress_end(&prog);
    sqlite3_finalize(st);
    return rc;
}

int ggprof_model_nodes_load(sqlite3 *db, ggprof_model *l, char *why, size_t why_len) {
    memset(l, 0, sizeof(*l));
    ggprof_index nodes = { 0 };
    int          rc    = load_nodes(db, l, &nodes);
    ggprof_index_free(&nodes);
    if (rc) {
        const char *e = sqlite3_errcode(db) == SQLITE_OK || sqlite3_errcode(db) >= SQLITE_ROW ? "out of memory" : sqlite3_errmsg(db);
        snprintf(why, why_len, "reading the nodes: %s", e);
        ggprof_model_free(l);
    }
    return rc;
}

int ggprof_model_each(sqlite3 *db, ggprof_model *l, int what, const char *progress, ggprof_model_fn fn, void *ctx,
                       char *why, size_t why_len) {
    memset(l, 0, sizeof(*l));
    ggprof_index names = { 0 }, nodes = { 0 };
    stream s = { .l = l, .names = &names, .nodes = &nodes, .fn = fn, .ctx = ctx };
    int rc = -1;
    if (!(l->names = calloc(1, sizeof(*l->names)))) goto out;
    l->n_names = 1;
    if (load_nodes(db, l, &nodes) != 0 || load_backends(db, l) != 0 || load_splits(db, l) != 0 ||
        ((what & GGPROF_MODEL_EXPORT) && load_types(db, l) != 0) ||
        load_list_keys(db, &s) != 0) {
        goto out;
    }
    if ((rc = stream_records(db, &s, what, progress)) != 0) goto out;
    rc = load_graphs(db, l, s.gs, s.n_gs);
out:
    if (rc) {
        const char *e = sqlite3_errcode(db) == SQLITE_OK || sqlite3_errcode(db) >= SQLITE_ROW ? "out of memory" : sqlite3_errmsg(db);
        snprintf(why, why_len, "reading the records for their layers: %s", e);
        ggprof_model_free(l);
    }
    free(s.gs);
    free(s.list);
    free(s.chunk);
    ggprof_index_free(&names);
    ggprof_index_free(&nodes);
    return rc;
}

/* ggprof_model_load's consumer: every graph's records kept, in the pass's order. */
typedef struct {
    ggprof_model_rec *v;
    size_t       n, cap;
} rec_list;

static int keep_all(void *ctx, const ggprof_model *l, const ggprof_model_rec *rec, size_t n, const ggprof_model_graph *g) {
    (void) l, (void) g;
    rec_list *k = ctx;
    if (k->n + n > k->cap) {
        size_t cap = k->cap ? k->cap : 4096;
        while (cap < k->n + n) cap *= 2;
        ggprof_model_rec *v = realloc(k->v, cap * sizeof(*v));
        if (!v) return -1;
        k->v   = v;
        k->cap = cap;
    }
    memcpy(k->v + k->n, rec, n * sizeof(*rec));
    k->n += n;
    return 0;
}

int ggprof_model_load(sqlite3 *db, ggprof_model *l, int what, const char *progress, char *why, size_t why_len) {
    rec_list all = { 0 };
    if (ggprof_model_each(db, l, what, progress, keep_all, &all, why, why_len) != 0) {
        free(all.v);
        return -1;
    }
    l->rec = all.v, l->n_rec = all.n;
    return 0;
}

/* ggprof_model_load_sampled's consumer: the records of one graph in every k, and of no graph. */
typedef struct {
    rec_list list;
    int64_t  every, graphs;
} rec_sample;

static int keep_sample(void *ctx, const ggprof_model *l, const ggprof_model_rec *rec, size_t n, const ggprof_model_graph *g) {
    rec_sample *k = ctx;
    if (n && rec[0].graph_id != GGPROF_MODEL_NULL && k->graphs++ % k->every != 0) return 0;
    return keep_all(&k->list, l, rec, n, g);
}

int ggprof_model_load_sampled(sqlite3 *db, ggprof_model *l, int what, const char *progress, int64_t max_records,
                               ggprof_model_sample *out, char *why, size_t why_len) {
    memset(out, 0, sizeof(*out));
    out->every = 1;
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, "SELECT count(*) FROM events", -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW) {
        out->records = sqlite3_column_int64(st, 0);
    }
    sqlite3_finalize(st);
    if (max_records <= 0 || out->records <= max_records) {
        int rc = ggprof_model_load(db, l, what, progress, why, why_len);
        out->kept = (int64_t) l->n_rec;
        return rc;
    }
    rec_sample k = { { 0 }, (out->records + max_records - 1) / max_records, 0 };
    if (ggprof_model_each(db, l, what, progress, keep_sample, &k, why, why_len) != 0) {
        free(k.list.v);
        return -1;
    }
    l->rec = k.list.v, l->n_rec = k.list.n;
    out->every = k.every;
    out->kept  = (int64_t) l->n_rec;
    return 0;
}

void ggprof_model_free(ggprof_model *l) {
    for (size_t i = 0; i < l->n_nodes; i++) {
        free(l->nodes[i].tensor_name);
        free(l->nodes[i].sub_op_name);
        free(l->nodes[i].ne_src);
        free(l->nodes[i].type_src);
        free(l->nodes[i].op);
        free(l->nodes[i].ne);
        free(l->nodes[i].nb_src);
        free(l->nodes[i].op_params);
    }
    for (size_t i = 1; i < l->n_names; i++) free(l->names[i]);
    for (size_t i = 0; i < l->n_backends; i++) free(l->backends[i].name);
    free(l->nodes);
    free(l->names);
    free(l->rec);
    free(l->graphs);
    free(l->backends);
    free(l->types);
    free(l->splits);
    memset(l, 0, sizeof(*l));
}
