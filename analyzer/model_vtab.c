/* The virtual tables behind the op_layers and graph_phase views (model_vtab.h): the model, computed once per
 * connection and again when the database changed, shown as SQLite rows. */
#include "model_vtab.h"

#include <stdlib.h>
#include <string.h>

#include "model.h"


/* One computation per connection, shared by both tables, made again when the database changed since. */
typedef struct {
    ggprof_model l;
    int           loaded, refs, records;
    sqlite3_int64 changes;
    unsigned      data_version;
} model_cache;

static void cache_release(void *p) {
    model_cache *c = p;
    if (--c->refs > 0) return;
    if (c->loaded) ggprof_model_free(&c->l);
    free(c);
}

static unsigned data_version(sqlite3 *db) {
    unsigned v = 0;
    if (sqlite3_file_control(db, "main", SQLITE_FCNTL_DATA_VERSION, &v) != SQLITE_OK) v = 0;
    return v;
}

static int skip_records(void *ctx, const ggprof_model *l, const ggprof_model_rec *rec, size_t n, const ggprof_model_graph *g) {
    (void) ctx, (void) l, (void) rec, (void) n, (void) g;
    return 0;
}

/* records: the op_layer table's records are needed (graph_phase needs only the graphs: memory per graph). */
static const ggprof_model *cache_get(model_cache *c, sqlite3 *db, int records, char **err) {
    sqlite3_int64 changes = sqlite3_total_changes64(db);
    unsigned      version = data_version(db);
    if (c->loaded && c->changes == changes && c->data_version == version && (c->records || !records)) return &c->l;
    if (c->loaded) ggprof_model_free(&c->l);
    c->loaded = 0;
    char why[512];
    if ((records ? ggprof_model_load(db, &c->l, 0, NULL, why, sizeof(why))
                 : ggprof_model_each(db, &c->l, 0, NULL, skip_records, NULL, why, sizeof(why))) != 0) {
        *err = sqlite3_mprintf("%s", why);
        return NULL;
    }
    c->loaded = 1, c->changes = changes, c->data_version = version, c->records = records;
    return &c->l;
}

typedef struct {
    sqlite3_vtab  base;
    sqlite3      *db;
    model_cache *cache;
    int           graphs; /* ggprof_graph_phase, else ggprof_op_layer */
} model_vtab;

typedef struct {
    sqlite3_vtab_cursor  base;
    const ggprof_model *l;
    size_t               i, n;
} model_cursor;

static int vt_connect(sqlite3 *db, void *aux, int argc, const char *const *argv, sqlite3_vtab **out, char **err) {
    (void) argc;
    (void) err;
    int graphs = strcmp(argv[0], "ggprof_graph_phase") == 0;
    int rc = sqlite3_declare_vtab(db, graphs ? "CREATE TABLE x(graph_id INTEGER, pid INTEGER, n_tokens INTEGER, phase TEXT,"
                                               " duration_ns INTEGER, ns_per_token REAL, sched_id INTEGER, start_ns INTEGER,"
                                               " op_ns INTEGER, sync_ns INTEGER, copy_ns INTEGER)"
                                             : "CREATE TABLE x(seq INTEGER, layer INTEGER)");
    if (rc != SQLITE_OK) return rc;
    model_vtab *v = sqlite3_malloc(sizeof(*v));
    if (!v) return SQLITE_NOMEM;
    memset(v, 0, sizeof(*v));
    v->db = db, v->cache = aux, v->graphs = graphs;
    *out = &v->base;
    return SQLITE_OK;
}

static int vt_disconnect(sqlite3_vtab *v) {
    sqlite3_free(v);
    return SQLITE_OK;
}

static int vt_best_index(sqlite3_vtab *v, sqlite3_index_info *info) {
    (void) v;
    info->estimatedCost = 1e6; /* a scan, whatever the constraints: the views put it first */
    info->estimatedRows = 1000000;
    return SQLITE_OK;
}

static int vt_open(sqlite3_vtab *v, sqlite3_vtab_cursor **out) {
    (void) v;
    model_cursor *c = sqlite3_malloc(sizeof(*c));
    if (!c) return SQLITE_NOMEM;
    memset(c, 0, sizeof(*c));
    *out = &c->base;
    return SQLITE_OK;
}

static int vt_close(sqlite3_vtab_cursor *c) {
    sqlite3_free(c);
    return SQLITE_OK;
}

static int vt_filter(sqlite3_vtab_cursor *cur, int idx, const char *idx_str, int argc, sqlite3_value **argv) {
    (void) idx, (void) idx_str, (void) argc, (void) argv;
    model_cursor *c = (model_cursor *) cur;
    model_vtab   *v = (model_vtab *) cur->pVtab;
    char *err        = NULL;
    if (!(c->l = cache_get(v->cache, v->db, !v->graphs, &err))) {
        sqlite3_free(v->base.zErrMsg);
        v->base.zErrMsg = err;
        return SQLITE_ERROR;
    }
    c->i = 0;
    c->n = v->graphs ? c->l->n_graphs : c->l->n_rec;
    return SQLITE_OK;
}

static int vt_next(sqlite3_vtab_cursor *cur) {
    ((model_cursor *) cur)->i++;
    return SQLITE_OK;
}

static int vt_eof(sqlite3_vtab_cursor *cur) {
    const model_cursor *c = (const model_cursor *) cur;
    return c->i >= c->n;
}

static void result_id(sqlite3_context *ctx, int64_t v) {
    if (v == GGPROF_MODEL_NULL) {
        sqlite3_result_null(ctx);
    } else {
        sqlite3_result_int64(ctx, v);
    }
}

static int vt_column(sqlite3_vtab_cursor *cur, sqlite3_context *ctx, int col) {
    const model_cursor *c = (const model_cursor *) cur;
    if (!((model_vtab *) cur->pVtab)->graphs) {
        const ggprof_model_rec *r = &c->l->rec[c->i];
        if (col == 0) {
            sqlite3_result_int64(ctx, r->seq);
        } else {
            result_id(ctx, r->layer < 0 ? GGPROF_MODEL_NULL : r->layer);
        }
        return SQLITE_OK;
    }
    const ggprof_model_graph *g = &c->l->graphs[c->i];
    switch (col) {
    case 0: result_id(ctx, g->graph_id); break;
    case 1: sqlite3_result_int(ctx, g->pid); break;
    case 2: result_id(ctx, g->has_tokens ? g->n_tokens : GGPROF_MODEL_NULL); break;
    case 3: sqlite3_result_text(ctx, g->phase, -1, SQLITE_STATIC); break;
    case 4: sqlite3_result_int64(ctx, g->duration_ns); break;
    case 5:
        if (g->has_tokens && g->n_tokens != 0) {
            sqlite3_result_double(ctx, (double) g->duration_ns / (double) g->n_tokens);
        } else {
            sqlite3_result_null(ctx);
        }
        break;
    case 6: sqlite3_result_int64(ctx, g->sched_id); break;
    case 7: sqlite3_result_int64(ctx, g->start_ns); break;
    case 8: sqlite3_result_int64(ctx, g->op_ns); break;
    case 9: sqlite3_result_int64(ctx, g->sync_ns); break;
    default: sqlite3_result_int64(ctx, g->copy_ns);
    }
    return SQLITE_OK;
}

static int vt_rowid(sqlite3_vtab_cursor *cur, sqlite3_int64 *rowid) {
    *rowid = (sqlite3_int64) ((model_cursor *) cur)->i;
    return SQLITE_OK;
}

static const sqlite3_module k_module = {
    .iVersion    = 0,
    .xCreate     = NULL, /* eponymous only: "FROM ggprof_op_layer", never CREATE VIRTUAL TABLE */
    .xConnect    = vt_connect,
    .xBestIndex  = vt_best_index,
    .xDisconnect = vt_disconnect,
    .xDestroy    = vt_disconnect,
    .xOpen       = vt_open,
    .xClose      = vt_close,
    .xFilter     = vt_filter,
    .xNext       = vt_next,
    .xEof        = vt_eof,
    .xColumn     = vt_column,
    .xRowid      = vt_rowid,
};

int ggprof_model_register(sqlite3 *db) {
    model_cache *c = calloc(1, sizeof(*c));
    if (!c) return SQLITE_NOMEM;
    c->refs = 2;
    int rc  = sqlite3_create_module_v2(db, "ggprof_op_layer", &k_module, c, cache_release);
    int rc2 = sqlite3_create_module_v2(db, "ggprof_graph_phase", &k_module, c, cache_release);
    return rc != SQLITE_OK ? rc : rc2;
}
