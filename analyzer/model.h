/* The analyzer's trace model: a trace's records, nodes, names, graphs, backends and splits read into C once, with
 * each record's layer and each graph's tokens and phase worked out in one pass (rules in docs/rollups-and-diff.md,
 * layer_rule.h). What rollup, diff and the exports read; model_vtab.h shows it to SQL (the op_layers and
 * graph_phase views, docs/queries.md). */
#ifndef GGPROF_MODEL_H
#define GGPROF_MODEL_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

#define GGPROF_MODEL_NULL INT64_MIN /* a NULL graph_id, node_id or node_index */

/* a + b on a trace's times, wrapping where a damaged trace's values overflow (never undefined). */
static inline int64_t ggprof_ns_add(int64_t a, int64_t b) { return (int64_t) ((uint64_t) a + (uint64_t) b); }

/* A node as the records refer to it (pid, node_id), with what the pass derives from it. */
typedef struct {
    int32_t pid;
    int64_t node_id;
    char   *tensor_name, *sub_op_name, *ne_src, *type_src, *op, *ne; /* NULL when NULL */
    char   *nb_src, *op_params;                                      /* NULL when NULL (the JSON profile's) */
    int64_t sub_op, out_type;                                        /* -1 when NULL */
    int64_t n_src;                                                   /* 0 when NULL */
    int     own_layer;                                     /* ggprof_layer_of(tensor_name); -1: none */
    int     anchor;       /* a named tensor: not empty, not ggml's "node_N" or "leaf_N" */
    int     has_rows;     /* ne[1] is a number: a GET_ROWS's rows, the tokens of llama.cpp's batch */
    int64_t rows;
    int     has_src_rows; /* ne_src[1][1] is a number: a MUL_MAT's second input's rows */
    int64_t src_rows;
} ggprof_model_node;

/* A record, in the order of the pass: by process, graph (NULL first), start time, then rowid. */
typedef struct {
    int64_t  seq; /* the events rowid */
    int64_t  graph_id, sched_id, node_id, node_index, start_ns, duration_ns;
    int64_t  tid, split_id, bytes, wait_ns; /* 0 when NULL */
    int32_t  pid, backend_id, type, timing;
    int32_t  layer;       /* -1: none */
    uint32_t name, extra; /* index into names; 0 is NULL */
    uint32_t node, fused; /* index + 1 into nodes of node_id and fused_node_id; 0: none */
} ggprof_model_rec;

/* A graph as the graph_phase view shows it (the graph list's rows, or each graph's span of records when the
 * trace has no list), in its order: by process, start, graph id. */
typedef struct {
    int32_t     pid;
    int64_t     graph_id, sched_id, start_ns, duration_ns;
    int         has_tokens;
    int64_t     n_tokens;
    const char *phase; /* "prompt", "generation" or "unknown" */
    int64_t     op_ns, sync_ns, copy_ns;
} ggprof_model_graph;

/* A split of a graph (the splits view), in the table's order. */
typedef struct {
    int32_t pid, backend_id;
    int64_t sched_id, graph_id, split_id, start_ns, duration_ns, n_nodes, n_ticks, n_expected, engine_ns;
    int64_t ticks_matched; /* GGPROF_MODEL_NULL when NULL */
} ggprof_model_split;

/* A ggml type id of a process with its name (ggml_types; a JSON import has none). */
typedef struct {
    int32_t pid;
    int64_t type;
    char    name[32];
} ggprof_model_type;

/* A backend of a scheduler, for its name. */
typedef struct {
    int32_t pid, id;
    int64_t sched_id;
    char   *name;
} ggprof_model_backend;

typedef struct {
    ggprof_model_rec     *rec;
    size_t           n_rec;
    ggprof_model_node    *nodes;
    size_t           n_nodes;
    char           **names; /* names[0] is NULL */
    size_t           n_names;
    ggprof_model_graph   *graphs;
    size_t           n_graphs;
    ggprof_model_backend *backends;
    size_t           n_backends;
    ggprof_model_type *types; /* with GGPROF_MODEL_EXPORT only */
    size_t           n_types;
    ggprof_model_split   *splits;
    size_t           n_splits;
    int64_t          op_ns; /* every OP record's time */
} ggprof_model;

/* Reads the trace's records, nodes, graphs and backends and computes each record's layer (rules in
 * docs/rollups-and-diff.md) and each graph's tokens and phase. what: GGPROF_MODEL_EXPORT also reads what only
 * the exports show (tid, split_id, bytes, wait_ns, timing, extra, the fused node, the type names; 0 or none
 * without it).
 * progress: a label for long work on stderr (NULL for none). Returns 0, or -1 with a one-line reason. */
#define GGPROF_MODEL_EXPORT 1
int  ggprof_model_load(sqlite3 *db, ggprof_model *l, int what, const char *progress, char *why, size_t why_len);

/* The same pass with memory per graph, not per record: fn gets each graph's records (one process and graph id;
 * the records of no graph of a process first), in the order ggprof_model_load keeps them, with their layers;
 * g is the graph as l->graphs will show it (tokens, phase, sums; NULL for records of no graph or of a graph the
 * graph list lacks). The records are read once, in file order when it is the pass's (a recording's), else
 * sorted by SQLite. Afterwards l holds everything but the records (n_rec 0). fn returns 0, or -1 to stop (an
 * error: out of memory). Returns 0, or -1 with a one-line reason. */
typedef int (*ggprof_model_fn)(void *ctx, const ggprof_model *l, const ggprof_model_rec *rec, size_t n, const ggprof_model_graph *g);
int ggprof_model_each(sqlite3 *db, ggprof_model *l, int what, const char *progress, ggprof_model_fn fn, void *ctx,
                       char *why, size_t why_len);
void ggprof_model_free(ggprof_model *l);
/* The nodes alone, as ggprof_model_load reads them (the first row of a (pid, node_id), none of a NULL node_id), for
 * a reader that needs no records (the JSON profile's writer). Returns 0, or -1 with a one-line reason. */
int ggprof_model_nodes_load(sqlite3 *db, ggprof_model *l, char *why, size_t why_len);
/* ggprof_model_load in bounded memory, for what shows records one by one (the exports): when the trace has more
 * than max_records records (0: no limit), only those of one graph in every k (k = ceil(records / max_records); the
 * first of each k in the pass's order) and of no graph; every graph, split and node stays. out says what was kept. */
#define GGPROF_MODEL_MAX_RECORDS 1048576 /* the exports' default (--max-records): about 220 MiB */
typedef struct {
    int64_t records, kept, every; /* every: 1 when all were kept */
} ggprof_model_sample;
int ggprof_model_load_sampled(sqlite3 *db, ggprof_model *l, int what, const char *progress, int64_t max_records,
                               ggprof_model_sample *out, char *why, size_t why_len);


static inline const ggprof_model_node *ggprof_model_rec_node(const ggprof_model *l, const ggprof_model_rec *r) {
    return r->node ? &l->nodes[r->node - 1] : NULL;
}

/* The records view's columns of r (docs/trace-database.md): tensor_name (NULL when none or empty), ne, ne_src,
 * type_src (as JSON text, "[0, 0, 0, 0]" and "[]" when the record has no node), out_type, and extra (the
 * record's own; else a fused pair's "OP+OP", else a copy's tensor; buf holds it when made here). */
const char *ggprof_model_rec_tensor(const ggprof_model *l, const ggprof_model_rec *r);
const char *ggprof_model_rec_ne(const ggprof_model *l, const ggprof_model_rec *r);
const char *ggprof_model_rec_ne_src(const ggprof_model *l, const ggprof_model_rec *r);
const char *ggprof_model_rec_type_src(const ggprof_model *l, const ggprof_model_rec *r);
int64_t     ggprof_model_rec_out_type(const ggprof_model *l, const ggprof_model_rec *r);
const char *ggprof_model_rec_extra(const ggprof_model *l, const ggprof_model_rec *r, char *buf, size_t len);

/* The schedulers process pid computed on: of its splits and its OP and SYNC records. */
size_t ggprof_model_scheds(const ggprof_model *l, int32_t pid);

/* The earliest start of a record, a split or a graph; 0 for an empty trace. */
int64_t ggprof_model_t0(const ggprof_model *l);

/* The labels of a backend and of a ggml type, defined here only: the name when it is not NULL or empty, else
 * "backend N" ("no backend" for a negative id), "type N", in buf. Every view, rule and export labels through these,
 * in C or in SQL: ggprof_labels_register makes them the SQL functions ggprof_backend_label(name, id) and
 * ggprof_type_label(name, type) (NULL when the name is missing and the id NULL), on every trace the analyzer opens
 * (views.c), so that a query's label and a C caller's cannot differ. */
const char *ggprof_backend_label(const char *name, int64_t id, char *buf, size_t len);
const char *ggprof_type_label(const char *name, int64_t type, char *buf, size_t len);
int         ggprof_labels_register(sqlite3 *db); /* SQLITE_OK or an SQLite error code */

/* The name of backend id of scheduler sched in process pid (the trace's backend_list), NULL when the trace has none. */
const char *ggprof_model_backend_name(const ggprof_model *l, int32_t pid, int64_t sched_id, int32_t id);
/* The same for a label: ggprof_backend_label of that name. */
const char *ggprof_model_backend_label(const ggprof_model *l, int32_t pid, int64_t sched_id, int64_t id, char *buf, size_t len);

/* The name of ggml type id type in process pid (else of another process of the trace), else ggprof_type_label's
 * "type N" in buf (a trace without ggml_types: a JSON import). Needs GGPROF_MODEL_EXPORT. */
const char *ggprof_model_type_name(const ggprof_model *l, int32_t pid, int64_t type, char *buf, size_t len);

#endif
