/* The distinct op cases of a trace, grouped as test-export-graph-ops groups them: op, output type and shape, op
 * params, sources' types, shapes and strides (the backend too, for the upstream profiler's trailing column). */
#include "trace_db.h"
#include "testcases.h"

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "export.h"
#include "outfile.h"
#include "v3_format.h"

/* Grouping on the stored JSON text of each field: the node table writes them one way, so equal values group. The
 * records are first summed per (process, node, fused node, scheduler, backend) on their integer columns, so that
 * the joins and the grouping on text run once per node, not once per record (3 us a record before). */
static const char k_sql[] =
    "SELECT n.op_id, n.out_type, n.ne, n.op_params, n.n_src, n.type_src, n.ne_src, n.nb_src, n.op, min(n.tensor_name),"
    " COALESCE(b.name, '?'), f.op, sum(e.n), sum(e.ns)"
    " FROM (SELECT pid, node_id, fused_node_id, sched_id, backend_id, count(*) AS n, sum(duration_ns) AS ns FROM events"
    " WHERE type = 0 GROUP BY pid, node_id, fused_node_id, sched_id, backend_id) e"
    " JOIN nodes n ON n.pid = e.pid AND n.node_id = e.node_id"
    " LEFT JOIN nodes f ON f.pid = e.pid AND f.node_id = e.fused_node_id AND e.fused_node_id != 0"
    " LEFT JOIN backends b ON b.pid = e.pid AND b.sched_id = e.sched_id AND b.id = e.backend_id"
    " GROUP BY n.op_id, n.out_type, n.ne, n.op_params, n.type_src, n.ne_src, n.nb_src, 11, f.op"
    " ORDER BY 14 DESC, n.op";

static void copy_name(char *dst, size_t len, const char *s) {
    snprintf(dst, len, "%s", s ? s : "");
    for (char *p = dst; *p; p++) {
        if (isspace((unsigned char) *p)) *p = '_'; /* test-backend-ops reads the name as one word */
    }
}

static int add_skip(ggprof_cases *c, const char *what, const char *why, int64_t count, double ns) {
    ggprof_case_skip *v = realloc(c->skip, (c->n_skip + 1) * sizeof(*v));
    if (!v) return -1;
    c->skip = v;
    ggprof_case_skip *s = &v[c->n_skip++];
    memset(s, 0, sizeof(*s));
    snprintf(s->what, sizeof(s->what), "%s", what);
    snprintf(s->why, sizeof(s->why), "%s", why);
    s->count    = count;
    s->total_ns = ns;
    return 0;
}

/* The integer types of the traced ggml (index sources), by the names its ggml_type_name gave. */
typedef struct {
    int32_t i32, i64;
} index_types;

static index_types load_index_types(sqlite3 *db) {
    index_types t = { -1, -1 };
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, "SELECT type, name FROM ggml_types", -1, &st, NULL) != SQLITE_OK) return t;
    while (sqlite3_step(st) == SQLITE_ROW) {
        const char *name = (const char *) sqlite3_column_text(st, 1);
        if (name && strcmp(name, "i32") == 0) t.i32 = sqlite3_column_int(st, 0);
        if (name && strcmp(name, "i64") == 0) t.i64 = sqlite3_column_int(st, 0);
    }
    sqlite3_finalize(st);
    return t;
}

/* test-backend-ops fills an op's index source (rows to get or set) as one contiguous array, and expert ids
 * (MUL_MAT_ID, ADD_ID) row by row at the row stride: where the view it builds is strided otherwise, part of it
 * holds garbage, and ggml asserts on an out-of-range index. */
static bool strided_index(const ggprof_case *k, index_types t) {
    bool by_row = strcmp(k->op, "MUL_MAT_ID") == 0 || strcmp(k->op, "ADD_ID") == 0;
    for (int s = 0; s < k->n_src; s++) {
        int64_t size = k->type_src[s] == t.i32 ? 4 : k->type_src[s] == t.i64 ? 8 : 0;
        if (!size) continue;
        const int64_t *ne = k->ne_src[s], *nb = k->nb_src[s];
        if (nb[0] != size || (!by_row && nb[1] != nb[0] * ne[0]) || nb[2] != nb[1] * ne[1] || nb[3] != nb[2] * ne[2]) {
            return true;
        }
    }
    return false;
}

/* One row of k_sql into a case (0), a skip (1), or -1 when out of memory. */
static int add_row(ggprof_cases *c, sqlite3_stmt *st, index_types it) {
    const char *op = (const char *) sqlite3_column_text(st, 8), *fused = (const char *) sqlite3_column_text(st, 11);
    int64_t count = sqlite3_column_int64(st, 12);
    double  ns    = sqlite3_column_double(st, 13);
    char    what[96];
    int64_t ne[4] = { 0, 0, 0, 0 };
    ggprof_db_ints((const char *) sqlite3_column_text(st, 2), ne, 4);
    if (fused) {
        snprintf(what, sizeof(what), "%s+%s %lldx%lldx%lldx%lld", op ? op : "?", fused, (long long) ne[0],
                 (long long) ne[1], (long long) ne[2], (long long) ne[3]);
        return add_skip(c, what, "fused: the backend computes two ops as one", count, ns) ? -1 : 1;
    }
    if (sqlite3_column_type(st, 0) == SQLITE_NULL) {
        return add_skip(c, op ? op : "?", "no op id (a trace read from JSON, or recorded before schema 2)", count, ns)
                   ? -1 : 1;
    }
    ggprof_case *v = realloc(c->v, (c->n + 1) * sizeof(*v));
    if (!v) return -1;
    c->v = v;
    ggprof_case *k = &v[c->n++];
    memset(k, 0, sizeof(*k));
    k->op_id    = sqlite3_column_int(st, 0);
    k->out_type = sqlite3_column_int(st, 1);
    ggprof_db_ints((const char *) sqlite3_column_text(st, 2), k->ne, 4);
    int64_t tmp[GGPROF_MAX_SRC * 4];
    int np = ggprof_db_ints((const char *) sqlite3_column_text(st, 3), tmp, GGPROF_N_OP_PARAMS);
    for (int i = 0; i < np; i++) k->op_params[i] = (int32_t) tmp[i];
    k->n_src = sqlite3_column_int(st, 4);
    if (k->n_src < 0 || k->n_src > GGPROF_MAX_SRC) k->n_src = 0;
    int nt = ggprof_db_ints((const char *) sqlite3_column_text(st, 5), tmp, GGPROF_MAX_SRC);
    for (int i = 0; i < nt; i++) k->type_src[i] = (int32_t) tmp[i];
    ggprof_db_ints((const char *) sqlite3_column_text(st, 6), &k->ne_src[0][0], GGPROF_MAX_SRC * 4);
    ggprof_db_ints((const char *) sqlite3_column_text(st, 7), &k->nb_src[0][0], GGPROF_MAX_SRC * 4);
    copy_name(k->op, sizeof(k->op), op);
    copy_name(k->name, sizeof(k->name), (const char *) sqlite3_column_text(st, 9));
    copy_name(k->backend, sizeof(k->backend), (const char *) sqlite3_column_text(st, 10));
    k->count    = count;
    k->total_ns = ns;
    if (!strided_index(k, it)) return 0;
    c->n--;
    snprintf(what, sizeof(what), "%s %s %lldx%lldx%lldx%lld", op ? op : "?", k->name, (long long) ne[0],
             (long long) ne[1], (long long) ne[2], (long long) ne[3]);
    return add_skip(c, what, "a strided index source: test-backend-ops fills indices contiguously", count, ns) ? -1 : 1;
}

int ggprof_cases_load(sqlite3 *db, double min_share, ggprof_cases *c, char *why, size_t why_len) {
    memset(c, 0, sizeof(*c));
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, k_sql, -1, &st, NULL) != SQLITE_OK) {
        snprintf(why, why_len, "cannot read the trace's ops: %s", sqlite3_errmsg(db));
        return -1;
    }
    double      all = 0;
    int         rc  = 0, step;
    index_types it  = load_index_types(db);
    while ((step = sqlite3_step(st)) == SQLITE_ROW && rc >= 0) {
        all += sqlite3_column_double(st, 13);
        rc = add_row(c, st, it);
    }
    sqlite3_finalize(st);
    if (rc < 0 || step != SQLITE_DONE) {
        snprintf(why, why_len, rc < 0 ? "out of memory" : "cannot read the trace's ops: %s", sqlite3_errmsg(db));
        ggprof_cases_free(c);
        return -1;
    }
    /* Shares of all OP time; the cases under min_share go (ranked by time, so they are the tail). */
    size_t kept = 0;
    for (size_t i = 0; i < c->n; i++) {
        c->v[i].share = all > 0 ? 100.0 * c->v[i].total_ns / all : 0;
        if (c->v[i].share >= min_share) c->v[kept++] = c->v[i];
    }
    c->n = kept;
    for (size_t i = 0; i < c->n_skip; i++) c->skip[i].share = all > 0 ? 100.0 * c->skip[i].total_ns / all : 0;
    return 0;
}

void ggprof_cases_free(ggprof_cases *c) {
    free(c->v);
    free(c->skip);
    memset(c, 0, sizeof(*c));
}

void ggprof_case_write(FILE *f, const ggprof_case *c, const char *name) {
    fprintf(f, "%d %d", c->op_id, c->out_type);
    for (int d = 0; d < 4; d++) fprintf(f, " %lld", (long long) c->ne[d]);
    fprintf(f, " %d", GGPROF_N_OP_PARAMS);
    for (int i = 0; i < GGPROF_N_OP_PARAMS; i++) fprintf(f, " %d", c->op_params[i]);
    fprintf(f, " %d", c->n_src);
    for (int s = 0; s < c->n_src; s++) {
        fprintf(f, " %d", c->type_src[s]);
        for (int d = 0; d < 4; d++) fprintf(f, " %lld", (long long) c->ne_src[s][d]);
        for (int d = 0; d < 4; d++) fprintf(f, " %lld", (long long) c->nb_src[s][d]);
    }
    if (!name) name = c->name;
    fprintf(f, " %s %s\n", name[0] ? name : "-", c->backend[0] ? c->backend : "-");
}

/* ---- ggprof export --test-file ---- */

/* The cases of at least o->min_share % of OP time, largest first; what was left out goes to stdout as comment
 * lines. */
int ggprof_export_test_file(sqlite3 *db, const char *path, const ggprof_export_opts *o, char *why, size_t why_len) {
    ggprof_cases c;
    if (ggprof_cases_load(db, o->min_share, &c, why, why_len) != 0) return -1;
    if (c.n == 0) {
        snprintf(why, why_len, "no op of the trace can go to '%s': %s", path,
                 c.n_skip ? "every one is fused or has no op id (see 'ggprof export --help')" : "it has no OP records");
        ggprof_cases_free(&c);
        return -1;
    }
    ggprof_outfile of; /* a new private file, renamed over path when whole (outfile.h) */
    FILE *f = ggprof_outfile_open(&of, path);
    if (!f) {
        snprintf(why, why_len, "cannot write '%s': %s", path, strerror(errno));
        ggprof_cases_free(&c);
        return -1;
    }
    double share = 0;
    for (size_t i = 0; i < c.n; i++) {
        ggprof_case_write(f, &c.v[i], NULL);
        share += c.v[i].share;
    }
    int bad = ggprof_outfile_close(&of, f, 0) != 0;
    if (bad) snprintf(why, why_len, "cannot write '%s': %s", path, strerror(errno));
    /* test-backend-ops of ggml 0.23 has no comment syntax in a test file (a '#' line becomes a NONE case of
     * uninitialised shape): what was left out is said here, as comment lines on stdout. */
    printf("# %s: %zu cases, %.1f%% of the trace's op time\n", path, c.n, share);
    for (size_t i = 0; i < c.n_skip; i++) {
        const ggprof_case_skip *s = &c.skip[i];
        char safe[256];
        printf("# skipped %s (%s): %lld runs, %.3f ms, %.1f%%\n", ggprof_text_safe(s->what, safe, sizeof(safe)), s->why,
               (long long) s->count,
               s->total_ns / 1e6, s->share);
    }
    ggprof_cases_free(&c);
    return bad ? -1 : 0;
}
