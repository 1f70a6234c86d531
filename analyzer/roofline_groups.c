/* A trace's OP records grouped by node description and backend, costed by the roofline model and ranked: what
 * top-ops, top-kernels, inefficiency and the HTML timeline's bandwidth read. */
#include "roofline.h"

#include "cli.h"
#include "output.h"
#include "trace.h"
#include "hash.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


/* ---------------------------------------------------------------- a trace's ops */

/* Every integer of a JSON text, in order ("[[1, 2], [3]]" -> 1 2 3); returns how many were stored. */
static const char *type_name(const ggprof_rl_types *t, int type) {
    return type >= 0 && type < GGPROF_RL_MAX_TYPES && t->name[type][0] ? t->name[type] : "?";
}

void ggprof_rl_shape(char *buf, size_t len, const ggprof_rl_node *n, const ggprof_rl_types *t) {
    size_t p = 0;
    buf[0]   = '\0';
    for (int i = 0; i < 2 && i < n->n_src && p < len; i++) {
        int nd = 4;
        while (nd > 1 && n->ne_src[i][nd - 1] <= 1) nd--;
        p += (size_t) snprintf(buf + p, len - p, "%s%s[", i ? " " : "", type_name(t, n->type_src[i]));
        for (int d = 0; d < nd && p < len; d++) {
            p += (size_t) snprintf(buf + p, len - p, "%s%lld", d ? "," : "", (long long) n->ne_src[i][d]);
        }
        if (p < len) p += (size_t) snprintf(buf + p, len - p, "]");
    }
}

void ggprof_rl_row_rates(const ggprof_rl_row *r, double *gbps, double *gflops, double *flop_per_byte, double *roof_pct) {
    double ns      = (double) r->total_ns;
    *gbps          = r->bytes_known && ns > 0 ? r->bytes / ns : NAN; /* bytes per ns is GB/s */
    *gflops        = r->flops_known && ns > 0 ? r->flops / ns : NAN;
    *flop_per_byte = r->flops_known && r->bytes_known && r->bytes > 0 ? r->flops / r->bytes : NAN;
    *roof_pct      = r->has_roof && ns > 0 ? 100.0 * r->roof_ns / ns : NAN;
}

int ggprof_rl_rollup(const ggprof_rl_groups *g, const ggprof_roofs *roofs, int by_shape, ggprof_rl_row **rows,
                     size_t *n) {
    *rows = NULL;
    *n    = 0;
    if (!g->n) return 0;
    ggprof_rl_row *v = calloc(g->n, sizeof(*v));
    if (!v) return -1;
    size_t nr = 0;
    for (size_t i = 0; i < g->n; i++) {
        const ggprof_rl_group *x = &g->v[i];
        const char *shape = by_shape ? x->shape : "";
        char out[96] = "";
        if (by_shape) {
            int nd = 4;
            while (nd > 1 && x->node.ne[nd - 1] <= 1) nd--;
            size_t p = (size_t) snprintf(out, sizeof(out), "[");
            for (int d = 0; d < nd && p < sizeof(out); d++) {
                p += (size_t) snprintf(out + p, sizeof(out) - p, "%s%lld", d ? "," : "", (long long) x->node.ne[d]);
            }
            if (p < sizeof(out)) snprintf(out + p, sizeof(out) - p, "]");
        }
        /* Few rows (tens to hundreds): a linear search keeps the first-seen order without a hash table. */
        size_t r = 0;
        while (r < nr && !(strcmp(v[r].label, x->label) == 0 && strcmp(v[r].backend, x->backend) == 0 &&
                           strcmp(v[r].shape, shape) == 0 && strcmp(v[r].out_shape, out) == 0)) {
            r++;
        }
        ggprof_rl_row *row = &v[r];
        if (r == nr) {
            nr++;
            snprintf(row->label, sizeof(row->label), "%s", x->label);
            snprintf(row->backend, sizeof(row->backend), "%s", x->backend);
            snprintf(row->shape, sizeof(row->shape), "%s", shape);
            snprintf(row->out_shape, sizeof(row->out_shape), "%s", out);
            row->first_seq   = x->first_seq;
            row->min_ns      = x->min_ns;
            row->flops_known = row->bytes_known = 1;
            const ggprof_roof *roof = ggprof_roofs_find(roofs, x->backend);
            row->has_roof = roof != NULL;
        }
        double n_exec = (double) x->count;
        row->count += x->count;
        row->total_ns += x->total_ns;
        if (x->min_ns < row->min_ns) row->min_ns = x->min_ns;
        if (x->max_ns > row->max_ns) row->max_ns = x->max_ns;
        row->flops += x->cost.flops * n_exec;
        row->bytes += (x->cost.bytes_read + x->cost.bytes_written) * n_exec;
        row->bytes_written += x->cost.bytes_written * n_exec;
        row->flops_known &= x->cost.flops_known;
        row->bytes_known &= x->cost.bytes_known;
        if (strcmp(x->node.op, "MUL_MAT_ID") == 0) row->mul_mat_id = 1;
        const ggprof_roof *roof = ggprof_roofs_find(roofs, x->backend);
        if (roof && x->cost.bytes_known) {
            double peak = x->cost.f16 && roof->gflops_f16 > 0 ? roof->gflops_f16 : roof->gflops;
            row->roof_ns += ggprof_rl_roof_ns(roof, &x->cost) * n_exec;
            row->roof_mem_ns += (x->cost.bytes_read + x->cost.bytes_written) / roof->gbps * n_exec;
            row->roof_cmp_ns += x->cost.flops / peak * n_exec;
        }
        if (!row->bytes_known || !row->flops_known) row->has_roof = 0;
    }
    *rows = v;
    *n    = nr;
    return 0;
}

/* Types are per process: a trace of several processes keeps one table each. */
typedef struct {
    int32_t         pid;
    ggprof_rl_types t;
} pid_types;

static const ggprof_rl_types *types_for(sqlite3 *db, pid_types **cache, size_t *n, int32_t pid, int *from_trace) {
    for (size_t i = 0; i < *n; i++) {
        if ((*cache)[i].pid == pid) return &(*cache)[i].t;
    }
    pid_types *c = realloc(*cache, (*n + 1) * sizeof(**cache));
    if (!c) return NULL;
    *cache       = c;
    c[*n].pid    = pid;
    int rows     = ggprof_rl_types_load(db, pid, &c[*n].t);
    if (rows > 0) *from_trace = 1;
    return &c[(*n)++].t;
}

/* The op records grouped by process, scheduler, backend, node, name and fusion label, in one sequential read
 * of the events table and a hash table here: SQLite's GROUP BY over a million rows sorted them all (1.3-2.4 s);
 * this reads them once (docs/analysis.md, "Speed"). Groups come out in the order of their first record. */
typedef struct {
    int32_t  pid, backend_id;
    int64_t  sched_id, node_id, fused_node_id;
    char    *name, *extra; /* NULL when NULL in the trace */
    uint64_t hash;
    int64_t  count, first_seq;
    uint64_t total_ns, min_ns, max_ns;
    int      merged; /* folded into an earlier group with the same label */
} ev_group;

typedef struct {
    ev_group    *v;
    size_t       n, cap;
    ggprof_index index;
} ev_table;

static bool str_eq(const char *a, const char *b) { return a && b ? strcmp(a, b) == 0 : a == b; }

static uint64_t ev_hash(int32_t pid, int64_t sched, int32_t backend, int64_t node, int64_t fused, const char *name,
                        const char *extra) {
    uint64_t h = GGPROF_FNV_OFFSET;
    h = ggprof_fnv_step(h, (uint64_t) (uint32_t) pid);
    h = ggprof_fnv_step(h, (uint64_t) sched);
    h = ggprof_fnv_step(h, (uint64_t) (uint32_t) backend);
    h = ggprof_fnv_step(h, (uint64_t) node);
    h = ggprof_fnv_step(h, (uint64_t) fused);
    h = ggprof_fnv_step(h, name ? ggprof_fnv_str(name) : 1);
    h = ggprof_fnv_step(h, extra ? ggprof_fnv_str(extra) : 1);
    return h;
}

static uint64_t ev_at(const void *ctx, size_t i) { return ((const ev_table *) ctx)->v[i].hash; }

static int same_ev(const void *ctx, size_t i, const void *key) {
    const ev_group *x = &((const ev_table *) ctx)->v[i], *k = key;
    return x->hash == k->hash && x->pid == k->pid && x->sched_id == k->sched_id && x->backend_id == k->backend_id &&
           x->node_id == k->node_id && x->fused_node_id == k->fused_node_id && str_eq(x->name, k->name) &&
           str_eq(x->extra, k->extra);
}

static ev_group *ev_find(ev_table *t, int32_t pid, int64_t sched, int32_t backend, int64_t node, int64_t fused,
                         const char *name, const char *extra) {
    if (ggprof_index_reserve(&t->index, 0, t->n, ev_at, t) != 0) return NULL;
    ev_group k = { .pid = pid, .backend_id = backend, .sched_id = sched, .node_id = node, .fused_node_id = fused,
                   .name = (char *) name, .extra = (char *) extra, .hash = ev_hash(pid, sched, backend, node, fused, name, extra) };
    uint32_t *slot = ggprof_index_slot(&t->index, k.hash, same_ev, t, &k);
    if (*slot) return &t->v[*slot - 1];
    if (t->n == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 256;
        ev_group *v = realloc(t->v, cap * sizeof(*v));
        if (!v) return NULL;
        t->v   = v;
        t->cap = cap;
    }
    ev_group *x = &t->v[t->n];
    memset(x, 0, sizeof(*x));
    x->pid = pid, x->sched_id = sched, x->backend_id = backend, x->node_id = node, x->fused_node_id = fused;
    x->name  = name ? strdup(name) : NULL;
    x->extra = extra ? strdup(extra) : NULL;
    if ((name && !x->name) || (extra && !x->extra)) return NULL;
    x->hash = k.hash;
    x->min_ns = UINT64_MAX;
    *slot     = (uint32_t) ++t->n;
    return x;
}

static void ev_free(ev_table *t) {
    for (size_t i = 0; i < t->n; i++) {
        free(t->v[i].name);
        free(t->v[i].extra);
    }
    free(t->v);
    ggprof_index_free(&t->index);
}

/* per_record: also each record's rowid and group (rec_seq, rec_group), in rowid order; only those whose rowid's
 * bit is set in want (of n_want bits) when want is not NULL. */
static int groups_load(sqlite3 *db, ggprof_rl_groups *g, int per_record, const uint8_t *want, int64_t n_want, char *why,
                       size_t why_len) {
    memset(g, 0, sizeof(*g));
    ev_table t = { 0 };
    sqlite3_stmt *st = NULL;
    int rc = 0, step;
    size_t cap_rec = 0;
    uint32_t *ev_to_g = NULL; /* per_record: event group -> group */
    /* 1. Every op record, once, in file order. */
    if (sqlite3_prepare_v2(db, "SELECT pid, sched_id, backend_id, node_id, fused_node_id, name, extra, duration_ns, rowid"
                               " FROM events WHERE type = 0 ORDER BY rowid", -1, &st, NULL) != SQLITE_OK) {
        snprintf(why, why_len, "reading the trace's ops: %s", sqlite3_errmsg(db));
        return -1;
    }
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        ev_group *x = ev_find(&t, sqlite3_column_int(st, 0), sqlite3_column_int64(st, 1), sqlite3_column_int(st, 2),
                              sqlite3_column_type(st, 3) == SQLITE_NULL ? INT64_MIN : sqlite3_column_int64(st, 3),
                              sqlite3_column_int64(st, 4), (const char *) sqlite3_column_text(st, 5),
                              (const char *) sqlite3_column_text(st, 6));
        if (!x) {
            snprintf(why, why_len, "out of memory");
            rc = -1;
            break;
        }
        uint64_t d = (uint64_t) sqlite3_column_int64(st, 7);
        if (x->count++ == 0) x->first_seq = sqlite3_column_int64(st, 8);
        int64_t seq = sqlite3_column_int64(st, 8);
        if (per_record && (!want || (seq >= 0 && seq < n_want && (want[seq >> 3] >> (seq & 7) & 1)))) {
            /* the event group for now; made the group's index below */
            if (g->n_rec == cap_rec) {
                size_t ncap = cap_rec ? cap_rec * 2 : 4096;
                int64_t *seq = realloc(g->rec_seq, ncap * sizeof(*seq));
                if (seq) g->rec_seq = seq;
                uint32_t *grp = seq ? realloc(g->rec_group, ncap * sizeof(*grp)) : NULL;
                if (!grp) {
                    snprintf(why, why_len, "out of memory");
                    rc = -1;
                    break;
                }
                g->rec_group = grp;
                cap_rec      = ncap;
            }
            g->rec_seq[g->n_rec]     = seq;
            g->rec_group[g->n_rec++] = (uint32_t) (x - t.v);
        }
        x->total_ns += d;
        if (d < x->min_ns) x->min_ns = d;
        if (d > x->max_ns) x->max_ns = d;
    }
    if (rc == 0 && step != SQLITE_DONE) {
        snprintf(why, why_len, "reading the trace's ops: %s", sqlite3_errmsg(db));
        rc = -1;
    }
    sqlite3_finalize(st);
    /* 2. Per group: its node, its fused partner's op, its backend's name. */
    sqlite3_stmt *node = NULL, *fop = NULL, *be = NULL, *be_any = NULL;
    if (rc == 0 &&
        (sqlite3_prepare_v2(db, "SELECT op, sub_op_name, ne, COALESCE(out_type, -1), COALESCE(n_src, 0), ne_src, type_src,"
                                " op_params, COALESCE(sub_op, -1) FROM nodes WHERE pid = ? AND node_id = ?", -1, &node, NULL) != SQLITE_OK ||
         sqlite3_prepare_v2(db, "SELECT op FROM nodes WHERE pid = ? AND node_id = ?", -1, &fop, NULL) != SQLITE_OK ||
         sqlite3_prepare_v2(db, "SELECT name FROM backends WHERE pid = ? AND sched_id = ? AND id = ?", -1, &be, NULL) != SQLITE_OK ||
         sqlite3_prepare_v2(db, "SELECT name FROM backends WHERE id = ? ORDER BY pid, sched_id LIMIT 1", -1, &be_any, NULL) != SQLITE_OK)) {
        snprintf(why, why_len, "reading the trace's ops: %s", sqlite3_errmsg(db));
        rc = -1;
    }
    pid_types *types = NULL;
    size_t n_types = 0, cap = 0;
    struct key { size_t src; char *fused; } *keys = NULL; /* per group: its first event group, its label */
    if (rc == 0 && per_record && t.n && !(ev_to_g = malloc(t.n * sizeof(*ev_to_g)))) {
        snprintf(why, why_len, "out of memory");
        rc = -1;
    }
    for (size_t i = 0; rc == 0 && i < t.n; i++) {
        ev_group *e = &t.v[i];
        bool has_node = false;
        if (e->node_id != INT64_MIN) {
            sqlite3_bind_int(node, 1, e->pid);
            sqlite3_bind_int64(node, 2, e->node_id);
            has_node = sqlite3_step(node) == SQLITE_ROW;
        }
        /* The fusion label, as the records view makes it: extra, else "OP+OP" of a fused pair. */
        char *fused = e->extra ? strdup(e->extra) : NULL;
        if (!fused && e->fused_node_id > 0 && has_node && sqlite3_column_type(node, 0) != SQLITE_NULL) {
            sqlite3_bind_int(fop, 1, e->pid);
            sqlite3_bind_int64(fop, 2, e->fused_node_id);
            if (sqlite3_step(fop) == SQLITE_ROW && sqlite3_column_type(fop, 0) != SQLITE_NULL) {
                size_t len = strlen((const char *) sqlite3_column_text(node, 0)) + strlen((const char *) sqlite3_column_text(fop, 0)) + 2;
                fused = malloc(len);
                if (fused) snprintf(fused, len, "%s+%s", sqlite3_column_text(node, 0), sqlite3_column_text(fop, 0));
            }
            sqlite3_reset(fop);
        }
        /* Groups that differ only in how their label was made are one group. */
        ggprof_rl_group *x = NULL;
        for (size_t j = 0; j < g->n; j++) {
            const ev_group *f = &t.v[keys[j].src];
            if (f->pid == e->pid && f->sched_id == e->sched_id && f->backend_id == e->backend_id && f->node_id == e->node_id &&
                str_eq(f->name, e->name) && str_eq(keys[j].fused, fused)) {
                x = &g->v[j];
                if (ev_to_g) ev_to_g[i] = (uint32_t) j;
                break;
            }
        }
        if (x) {
            x->count += e->count;
            x->total_ns += e->total_ns;
            if (e->min_ns < x->min_ns) x->min_ns = e->min_ns;
            if (e->max_ns > x->max_ns) x->max_ns = e->max_ns;
            g->op_ns += e->total_ns;
            free(fused);
            sqlite3_reset(node);
            continue;
        }
        if (g->n == cap) {
            size_t ncap = cap ? cap * 2 : 256;
            ggprof_rl_group *v = realloc(g->v, ncap * sizeof(*v));
            if (v) g->v = v;
            struct key *k = v ? realloc(keys, ncap * sizeof(*k)) : NULL;
            if (!k) {
                snprintf(why, why_len, "out of memory");
                free(fused);
                rc = -1;
                break;
            }
            keys = k;
            cap  = ncap;
        }
        keys[g->n] = (struct key) { i, fused };
        if (ev_to_g) ev_to_g[i] = (uint32_t) g->n;
        x = &g->v[g->n];
        memset(x, 0, sizeof(*x));
        x->pid = e->pid;
        const char *bname = NULL;
        sqlite3_bind_int(be, 1, e->pid);
        sqlite3_bind_int64(be, 2, e->sched_id);
        sqlite3_bind_int(be, 3, e->backend_id);
        if (sqlite3_step(be) == SQLITE_ROW) bname = (const char *) sqlite3_column_text(be, 0);
        if (!bname) {
            sqlite3_bind_int(be_any, 1, e->backend_id);
            if (sqlite3_step(be_any) == SQLITE_ROW) bname = (const char *) sqlite3_column_text(be_any, 0);
        }
        snprintf(x->backend, sizeof(x->backend), "%s", bname ? bname : "unknown");
        sqlite3_reset(be);
        sqlite3_reset(be_any);
        snprintf(x->label, sizeof(x->label), "%s", fused && strchr(fused, '+') ? fused : e->name ? e->name : "unknown");
        x->count     = e->count;
        x->total_ns  = e->total_ns;
        x->min_ns    = e->min_ns;
        x->max_ns    = e->max_ns;
        x->first_seq = e->first_seq;
        ggprof_rl_node_from_text(&x->node, e->name, fused, has_node ? (const char *) sqlite3_column_text(node, 1) : NULL,
                                 has_node ? sqlite3_column_int(node, 8) : -1,
                                 has_node ? (const char *) sqlite3_column_text(node, 2) : NULL,
                                 has_node ? sqlite3_column_int(node, 3) : -1, has_node ? sqlite3_column_int(node, 4) : 0,
                                 has_node ? (const char *) sqlite3_column_text(node, 5) : NULL,
                                 has_node ? (const char *) sqlite3_column_text(node, 6) : NULL,
                                 has_node ? (const char *) sqlite3_column_text(node, 7) : NULL);
        sqlite3_reset(node);
        const ggprof_rl_types *ty = types_for(db, &types, &n_types, x->pid, &g->types_from_trace);
        if (!ty) {
            snprintf(why, why_len, "out of memory");
            free(fused); /* its group was not counted */
            rc = -1;
            break;
        }
        ggprof_rl_cost_of(&x->node, ty, &x->cost);
        ggprof_rl_shape(x->shape, sizeof(x->shape), &x->node, ty);
        g->op_ns += x->total_ns;
        g->n++;
    }
    sqlite3_finalize(node);
    sqlite3_finalize(fop);
    sqlite3_finalize(be);
    sqlite3_finalize(be_any);
    free(types);
    for (size_t j = 0; j < g->n; j++) free(keys[j].fused);
    free(keys);
    ev_free(&t);
    if (rc == 0) {
        if (sqlite3_prepare_v2(db, "SELECT COALESCE(sum(duration_ns), 0) FROM events", -1, &st, NULL) == SQLITE_OK &&
            sqlite3_step(st) == SQLITE_ROW) {
            g->all_ns = (uint64_t) sqlite3_column_int64(st, 0);
        }
        sqlite3_finalize(st);
    }
    if (rc == 0 && per_record) {
        for (size_t k = 0; k < g->n_rec; k++) g->rec_group[k] = ev_to_g[g->rec_group[k]];
    }
    free(ev_to_g);
    if (rc) ggprof_rl_groups_free(g);
    return rc;
}

int ggprof_rl_groups_load(sqlite3 *db, ggprof_rl_groups *g, char *why, size_t why_len) {
    return groups_load(db, g, 0, NULL, 0, why, why_len);
}

int ggprof_rl_groups_load_records(sqlite3 *db, ggprof_rl_groups *g, char *why, size_t why_len) {
    return groups_load(db, g, 1, NULL, 0, why, why_len);
}

int ggprof_rl_groups_load_some(sqlite3 *db, ggprof_rl_groups *g, const uint8_t *want, int64_t n_want, char *why,
                               size_t why_len) {
    return groups_load(db, g, 1, want, n_want, why, why_len);
}

const ggprof_rl_group *ggprof_rl_group_of(const ggprof_rl_groups *g, int64_t seq) {
    size_t lo = 0, hi = g->n_rec;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (g->rec_seq[mid] < seq) lo = mid + 1;
        else hi = mid;
    }
    return lo < g->n_rec && g->rec_seq[lo] == seq ? &g->v[g->rec_group[lo]] : NULL;
}

void ggprof_rl_groups_free(ggprof_rl_groups *g) {
    free(g->v);
    free(g->rec_seq);
    free(g->rec_group);
    memset(g, 0, sizeof(*g));
}

int ggprof_rank_opts_parse(ggprof_rank_opts *o, int argc, char **argv, const char *cmd) {
    memset(o, 0, sizeof(*o));
    o->n_rows = 20;
    o->format = GGPROF_FMT_TABLE;
    const ggprof_opt opts[] = {
        { "-n", NULL, GGPROF_OPT_COUNT, &o->n_rows, NULL, "N", "the first N rows (default 20; 0: all)" },
        { "--format", NULL, GGPROF_OPT_CALL, &o->format, ggprof_format_opt, "table|csv|json",
          "table (default; fits 80 columns), csv or json (every column, one object per row)" },
        { "--roof", NULL, GGPROF_OPT_CALL, &o->roofs, ggprof_roofs_opt, "BACKEND=GBPS,GFLOPS[,GFLOPS_F16]",
          "a backend's memory and compute roofs (repeatable; the F16 roof applies to matrix products on F16 "
          "weights)" },
        { "--roof-file", NULL, GGPROF_OPT_CALL, &o->roofs, ggprof_roofs_opt, "FILE",
          "roofs, one a line, as 'ggprof calibrate -o FILE' writes them" },
    };
    ggprof_args a = { opts, (int) (sizeof(opts) / sizeof(opts[0])), &o->trace, 1, 0, "one trace at a time ('%s' is a second)", 0, 0, &o->window };
    int rc = ggprof_parse_args(argc, argv, &a);
    if (rc) return rc;
    if (!o->trace) return ggprof_fail(GGPROF_EXIT_USAGE, "no trace given; usage: ggprof %s TRACE [-n N]", cmd);
    return 0;
}

int ggprof_rank_rows(const ggprof_rank_opts *o, int by_shape, ggprof_rl_groups *g, ggprof_rl_row **rows, size_t *n) {
    char why[512];
    sqlite3 *db;
    int rc = ggprof_trace_open_window(o->trace, &o->window, &db, why, sizeof(why));
    if (rc) return ggprof_fail(rc, "%s", why);
    if (ggprof_rl_groups_load(db, g, why, sizeof(why)) != 0) {
        sqlite3_close(db);
        return ggprof_fail(GGPROF_EXIT_INTERNAL, "'%s': %s", o->trace, why);
    }
    ggprof_coverage_line(db, g->coverage, sizeof(g->coverage));
    sqlite3_close(db);
    if (ggprof_rl_rollup(g, &o->roofs, by_shape, rows, n) != 0) {
        ggprof_rl_groups_free(g);
        return ggprof_fail(GGPROF_EXIT_INTERNAL, "out of memory");
    }
    return 0;
}
