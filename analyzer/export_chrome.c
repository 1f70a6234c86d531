/* ggprof export --chrome: the trace as Chrome Trace Event JSON, for Perfetto UI and chrome://tracing. */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sort.h"
#include "accounting.h"
#include "export.h"
#include "model.h"
#include "memory.h"
#include "outfile.h"
#include "threads.h"
#include "trace_db.h"
#include "v3_format.h"
#include "wire.h"

/* ---------------------------------------------------------------- lookups */

/* ---------------------------------------------------------------- tracks */

/* A track is one timeline row: a backend of one scheduler, a process's copies, or its graphs. Perfetto and
 * chrome://tracing need the X events of a row to nest; records of a backend that overlap without nesting
 * (concurrent work on an asynchronous backend) go to an extra row, "(overlap N)", rather than being lost. */
enum { TRACK_BACKEND = 0, TRACK_COPIES = 1, TRACK_GRAPHS = 2, TRACK_DEVICE = 3, TRACK_RUN = 4, TRACK_THREAD = 5 };
/* TRACK_RUN: a process's wall time cut into report's accounting categories ("ggprof: where the time went").
 * TRACK_THREAD: a thread of the program (its OS tid in `backend`): its llama_decode calls, regions and idle spans. */
/* TRACK_DEVICE: a backend's ops timed on the device's own clock (timing 4), on a row of their own under the
 * backend's host row ("Vulkan0 (device)"), as a GPU's work is apart from its launches in Nsight Systems. */

typedef struct {
    int64_t   pid, sched, backend;
    int       kind, sub;
    int64_t   tid;
    uint64_t *open; /* end times of the slices still open on this row, innermost last */
    size_t    n_open, cap_open;
    char      name[96];
} track;

typedef struct {
    track *v;
    size_t n, cap;
} tracks;

static void tracks_free(tracks *t) {
    for (size_t i = 0; i < t->n; i++) free(t->v[i].open);
    free(t->v);
}

static track *track_get(tracks *t, int64_t pid, int kind, int64_t sched, int64_t backend, int sub) {
    for (size_t i = t->n; i-- > 0;) {
        track *k = &t->v[i];
        if (k->pid == pid && k->kind == kind && k->sched == sched && k->backend == backend && k->sub == sub) return k;
    }
    if (t->n == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 16;
        track *v = realloc(t->v, cap * sizeof(*v));
        if (!v) return NULL;
        t->v   = v;
        t->cap = cap;
    }
    track *k = &t->v[t->n++];
    memset(k, 0, sizeof(*k));
    k->pid     = pid;
    k->kind    = kind;
    k->sched   = sched;
    k->backend = backend;
    k->sub     = sub;
    /* Tids are per process, numbered in the order rows are met: backends, then copies, then graphs. */
    int64_t next = 1;
    for (size_t i = 0; i + 1 < t->n; i++)
        if (t->v[i].pid == pid && t->v[i].tid >= next) next = t->v[i].tid + 1;
    k->tid = next;
    return k;
}

/* Places a slice [start, end) on the first row of its track where it nests; returns that row. */
static track *track_place(tracks *t, int64_t pid, int kind, int64_t sched, int64_t backend, uint64_t start,
                          uint64_t end) {
    for (int sub = 0;; sub++) {
        track *k = track_get(t, pid, kind, sched, backend, sub);
        if (!k) return NULL;
        while (k->n_open && k->open[k->n_open - 1] <= start) k->n_open--;
        if (k->n_open && k->open[k->n_open - 1] < end) continue;
        if (k->n_open == k->cap_open) {
            size_t cap = k->cap_open ? k->cap_open * 2 : 8;
            uint64_t *o = realloc(k->open, cap * sizeof(*o));
            if (!o) return NULL;
            k->open     = o;
            k->cap_open = cap;
        }
        k->open[k->n_open++] = end;
        return k;
    }
}

/* ---------------------------------------------------------------- copies and the ops that read them */

/* A copy flows into the first OP record (by start, then node index) of the same process, graph and split
 * that starts after the copy ended and has a source of the copied tensor's shape and type. The scheduler
 * copies a split's inputs just before computing that split, and the copy keeps the tensor's shape and type
 * but not its name (it becomes "BACKEND#name#N"), while records carry source shapes, not names: shape and
 * type are what the two records share. */
typedef struct {
    int64_t  seq, pid, graph, split;
    uint64_t start, end;
    int64_t  ne[4], type;
    int      has_graph;
    /* the consumer, once found */
    int      found;
    uint64_t op_start, op_end;
    int64_t  op_node, op_tid;
    /* the copy's own row */
    int64_t  tid;
} copy_rec;

static int cmp_copy_key(const void *a, const void *b) {
    const copy_rec *x = *(copy_rec *const *) a, *y = *(copy_rec *const *) b;
    if (x->pid != y->pid) return x->pid < y->pid ? -1 : 1;
    if (x->graph != y->graph) return x->graph < y->graph ? -1 : 1;
    if (x->split != y->split) return x->split < y->split ? -1 : 1;
    return (x->seq > y->seq) - (x->seq < y->seq);
}

typedef struct {
    copy_rec           *v;
    copy_rec          **by_key;
    const ggprof_model_rec **rec; /* the COPY records, v's order */
    size_t              n;
} copies;

static void copies_free(copies *c) {
    free(c->v);
    free(c->by_key);
    free(c->rec);
}

/* The copies (COPY records) by process, start, then seq: cp->v[i] is rec[i]. */
static int cmp_copy_order(const void *a, const void *b) {
    const ggprof_model_rec *x = *(const ggprof_model_rec *const *) a, *y = *(const ggprof_model_rec *const *) b;
    if (x->pid != y->pid) return x->pid < y->pid ? -1 : 1;
    if (x->start_ns != y->start_ns) return x->start_ns < y->start_ns ? -1 : 1;
    return (x->seq > y->seq) - (x->seq < y->seq);
}

static int copies_load(const ggprof_model *l, copies *c) {
    memset(c, 0, sizeof(*c));
    size_t n = 0;
    for (size_t i = 0; i < l->n_rec; i++) n += l->rec[i].type == 1;
    c->rec = malloc((n ? n : 1) * sizeof(*c->rec));
    c->v   = calloc(n ? n : 1, sizeof(*c->v));
    if (!c->rec || !c->v) return -1;
    for (size_t i = 0; i < l->n_rec; i++) {
        if (l->rec[i].type == 1) c->rec[c->n++] = &l->rec[i];
    }
    ggprof_sort(c->rec, c->n, sizeof(*c->rec), cmp_copy_order);
    for (size_t i = 0; i < c->n; i++) {
        const ggprof_model_rec *e = c->rec[i];
        copy_rec *r  = &c->v[i];
        r->seq       = e->seq;
        r->pid       = e->pid;
        r->has_graph = e->graph_id != GGPROF_MODEL_NULL;
        r->graph     = r->has_graph ? e->graph_id : 0;
        r->split     = e->split_id;
        r->start     = (uint64_t) e->start_ns;
        r->end       = r->start + (uint64_t) e->duration_ns;
        ggprof_db_ints(ggprof_model_rec_ne_src(l, e), r->ne, 4);
        int64_t t[1] = { -1 };
        ggprof_db_ints(ggprof_model_rec_type_src(l, e), t, 1);
        r->type = t[0];
    }
    c->by_key = malloc((c->n ? c->n : 1) * sizeof(*c->by_key));
    if (!c->by_key) return -1;
    for (size_t i = 0; i < c->n; i++) c->by_key[i] = &c->v[i];
    ggprof_sort(c->by_key, c->n, sizeof(*c->by_key), cmp_copy_key);
    return 0;
}

/* An OP record: offers itself to each copy of its split that it may have read. */
static void copies_offer(copies *c, int64_t pid, int64_t graph, int64_t split, uint64_t start, uint64_t end,
                         int64_t node, int64_t tid, const int64_t (*ne_src)[4], const int64_t *type_src, int n_src) {
    size_t lo = 0, hi = c->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        const copy_rec *m = c->by_key[mid];
        int less = m->pid != pid ? m->pid < pid : m->graph != graph ? m->graph < graph : m->split < split;
        if (less) lo = mid + 1;
        else hi = mid;
    }
    for (size_t i = lo; i < c->n; i++) {
        copy_rec *r = c->by_key[i];
        if (r->pid != pid || r->graph != graph || r->split != split) break;
        if (!r->has_graph || start < r->end) continue;
        if (r->found && (r->op_start < start || (r->op_start == start && r->op_node <= node))) continue;
        for (int s = 0; s < n_src; s++) {
            if (type_src[s] == r->type && memcmp(ne_src[s], r->ne, sizeof(r->ne)) == 0) {
                r->found    = 1;
                r->op_start = start;
                r->op_end   = end;
                r->op_node  = node;
                r->op_tid   = tid;
                break;
            }
        }
    }
}

/* ---------------------------------------------------------------- writing */

/* The writers of every event: printf's parsing was a fifth of a large export. The file is ours alone: no locking. */
static void put_raw(FILE *f, const char *s) { fputs_unlocked(s, f); }

static void put_u64(FILE *f, uint64_t v) {
    char d[24];
    fwrite_unlocked(d, 1, ggprof_fmt_u64(d, v), f);
}

static void put_i64(FILE *f, int64_t v) {
    if (v < 0) putc_unlocked('-', f);
    put_u64(f, v < 0 ? (uint64_t) 0 - (uint64_t) v : (uint64_t) v);
}

/* Times are written on a binary grid: microseconds plus a multiple of 2^-bits of one (bits at most 20: a step of
 * about a thousandth of a nanosecond), the instant's nearest grid point. Every such number below 2^53 grid points is a
 * double exactly, so whatever a viewer computes from them (ts + dur, ts - the first ts, a sort) is exact too: a
 * slice that ends where the next begins ends on the very double the next begins on, and a slice nested in
 * another stays inside it. Decimal nanoseconds ("1999.614") are not doubles: speedscope's ts + dur overshot the
 * next slice's ts by an ulp and misnested. Rounding to the grid is monotonic, so rows that nest in nanoseconds
 * nest on the grid, and each number is within half a grid step of its nanoseconds: ts * 1000 rounds back to them. */
typedef struct {
    uint64_t us;   /* whole microseconds */
    uint32_t frac; /* and frac / 2^bits of one */
} grid_t;

/* The finest grid, at most 2^-20 us, on which the latest instant `max_us` microseconds from t0 is below 2^53. */
static int grid_bits(uint64_t max_us) {
    int bits = 20;
    while (bits > 0 && max_us >= ((uint64_t) 1 << (53 - bits))) bits--;
    return bits;
}

static grid_t grid_of(uint64_t ns, int bits) {
    grid_t g = { ns / 1000, (uint32_t) ((((ns % 1000) << bits) + 500) / 1000) };
    if (g.frac >> bits) { /* rounded up to the next microsecond */
        g.us++;
        g.frac = 0;
    }
    return g;
}

static grid_t grid_sub(grid_t a, grid_t b, int bits) { /* a - b, a >= b */
    if (a.frac >= b.frac) return (grid_t) { a.us - b.us, a.frac - b.frac };
    return (grid_t) { a.us - b.us - 1, (uint32_t) (a.frac + ((uint32_t) 1 << bits) - b.frac) };
}

/* A grid time in decimal, exactly: "1999.6140003204345703125" (a fraction of 2^-bits has at most bits decimals). */
static void put_grid(FILE *f, grid_t g, int bits) {
    put_u64(f, g.us);
    if (!g.frac) return;
    char     d[24];
    size_t   n    = 0;
    uint64_t x    = g.frac, mask = ((uint64_t) 1 << bits) - 1;
    d[n++]        = '.';
    while (x && n < sizeof(d)) {
        x *= 10;
        d[n++] = (char) ('0' + (x >> bits));
        x &= mask;
    }
    fwrite_unlocked(d, 1, n, f);
}

static void put_ints(FILE *f, const int64_t *v, int n) {
    putc_unlocked('[', f);
    for (int i = 0; i < n; i++) {
        if (i) putc_unlocked(',', f);
        put_i64(f, v[i]);
    }
    putc_unlocked(']', f);
}

typedef struct {
    FILE    *f;
    uint64_t t0;
    int      n_events;
    int      bits; /* the time grid: 2^-bits us */
} out_t;

/* An instant, ns on CLOCK_MONOTONIC, as the file's time (never before t0). */
static void put_ts(out_t *o, uint64_t ns) { put_grid(o->f, grid_of(ns > o->t0 ? ns - o->t0 : 0, o->bits), o->bits); }

static void begin_x(out_t *o, const char *name, const char *cat, const track *k, uint64_t start, uint64_t dur) {
    put_raw(o->f, o->n_events++ ? ",\n{\"ph\":\"X\",\"name\":" : "\n{\"ph\":\"X\",\"name\":");
    ggprof_json_put(o->f, name, GGPROF_JSON_HTML);
    put_raw(o->f, ",\"cat\":\"");
    put_raw(o->f, cat);
    put_raw(o->f, "\",\"pid\":");
    put_i64(o->f, k->pid);
    put_raw(o->f, ",\"tid\":");
    put_i64(o->f, k->tid);
    /* the end on the grid, as the next slice's start will be; dur is what lies between (exact on the grid) */
    grid_t a = grid_of(start - o->t0, o->bits), b = grid_of(start + dur - o->t0, o->bits);
    put_raw(o->f, ",\"ts\":");
    put_grid(o->f, a, o->bits);
    put_raw(o->f, ",\"dur\":");
    put_grid(o->f, grid_sub(b, a, o->bits), o->bits);
    put_raw(o->f, ",\"args\":{");
}

static void arg_key(out_t *o, const char *key, int first) {
    put_raw(o->f, first ? "\"" : ",\"");
    put_raw(o->f, key);
    put_raw(o->f, "\":");
}

static void arg_str(out_t *o, const char *key, const char *v, int first) {
    arg_key(o, key, first);
    ggprof_json_put(o->f, v, GGPROF_JSON_HTML);
}

static void arg_int(out_t *o, const char *key, int64_t v) {
    arg_key(o, key, 0);
    put_i64(o->f, v);
}

/* Splits (enclosing slices) and OP and SYNC records, one backend row after another, each in time order (a
 * split before the records it encloses: longer first at the same start). */
typedef struct {
    int64_t              pid, sched, backend, start, dur;
    int                  what; /* 0 split, 1 OP, 2 SYNC */
    size_t               order;
    const ggprof_model_split *split;
    const ggprof_model_rec   *rec;
} item;

static int cmp_item(const void *a, const void *b) {
    const item *x = a, *y = b;
    if (x->pid != y->pid) return x->pid < y->pid ? -1 : 1;
    if (x->sched != y->sched) return x->sched < y->sched ? -1 : 1;
    if (x->backend != y->backend) return x->backend < y->backend ? -1 : 1;
    if (x->start != y->start) return x->start < y->start ? -1 : 1;
    if (x->dur != y->dur) return x->dur > y->dur ? -1 : 1;
    if (x->what != y->what) return x->what < y->what ? -1 : 1;
    return (x->order > y->order) - (x->order < y->order);
}

static void put_graph_args(out_t *o, int64_t graph, int64_t split) {
    if (graph != GGPROF_MODEL_NULL) arg_int(o, "graph_id", graph);
    arg_int(o, "split_id", split);
}

static void write_split(out_t *o, const track *k, const ggprof_model_split *s, const char *bname) {
    char name[48];
    snprintf(name, sizeof(name), "split %" PRId64, s->split_id);
    begin_x(o, name, "split", k, (uint64_t) s->start_ns, (uint64_t) s->duration_ns);
    arg_str(o, "backend", bname, 1);
    put_graph_args(o, s->graph_id, s->split_id);
    arg_int(o, "n_nodes", s->n_nodes);
    if (s->ticks_matched != GGPROF_MODEL_NULL) {
        arg_int(o, "ticks_matched", s->ticks_matched);
        arg_int(o, "n_ticks", s->n_ticks);
        arg_int(o, "n_expected", s->n_expected);
    }
    arg_int(o, "engine_ns", s->engine_ns);
    fputs("}}", o->f);
}

static void write_record(out_t *o, const track *k, const ggprof_model *l, const ggprof_model_rec *r, const char *bname,
                         copies *cp) {
    char b2[32], fused[256];
    int op            = r->type == 0;
    const char *name  = l->names[r->name];
    uint64_t start    = (uint64_t) r->start_ns, dur = (uint64_t) r->duration_ns;
    begin_x(o, name ? name : "unknown", op ? "op" : "sync", k, start, dur);
    arg_str(o, op ? "op" : "sync", name ? name : "unknown", 1);
    arg_str(o, "backend", bname, 0);
    put_graph_args(o, r->graph_id, r->split_id);
    arg_str(o, "timing", r->timing == 2 ? "cpu_tick" : r->timing == 1 ? "host_call" : "unknown", 0);
    if (!op) {
        fputs("}}", o->f);
        return;
    }
    int64_t node = r->node_index == GGPROF_MODEL_NULL ? 0 : r->node_index;
    arg_int(o, "node_index", node);
    arg_str(o, "tensor", ggprof_model_rec_tensor(l, r), 0);
    const char *extra = ggprof_model_rec_extra(l, r, fused, sizeof(fused));
    if (extra) arg_str(o, "fused", extra, 0);
    const ggprof_model_node *n = ggprof_model_rec_node(l, r);
    if (n && n->sub_op_name && n->sub_op_name[0]) arg_str(o, "sub_op", n->sub_op_name, 0);
    int64_t ne[4] = { 0 }, ne_src[GGPROF_MAX_SRC][4], type_src[GGPROF_MAX_SRC];
    ggprof_db_ints(ggprof_model_rec_ne(l, r), ne, 4);
    int n_src = ggprof_db_ints(ggprof_model_rec_ne_src(l, r), &ne_src[0][0], GGPROF_MAX_SRC * 4) / 4;
    int n_typ = ggprof_db_ints(ggprof_model_rec_type_src(l, r), type_src, GGPROF_MAX_SRC);
    for (int s = n_typ; s < GGPROF_MAX_SRC; s++) type_src[s] = -1;
    fputs(",\"shape\":", o->f);
    put_ints(o->f, ne, 4);
    arg_str(o, "type", ggprof_model_type_name(l, (int32_t) r->pid, ggprof_model_rec_out_type(l, r), b2, sizeof(b2)), 0);
    fputs(",\"src_shapes\":[", o->f);
    for (int s = 0; s < n_src; s++) {
        if (s) putc(',', o->f);
        put_ints(o->f, ne_src[s], 4);
    }
    fputs("],\"src_types\":[", o->f);
    for (int s = 0; s < n_src; s++) {
        if (s) putc(',', o->f);
        ggprof_json_put(o->f, type_src[s] < 0 ? "" : ggprof_model_type_name(l, (int32_t) r->pid, type_src[s], b2, sizeof(b2)),
                        GGPROF_JSON_HTML);
    }
    fputs("]", o->f);
    arg_int(o, "bytes", r->bytes);
    if (r->wait_ns) arg_int(o, "wait_ns", r->wait_ns);
    fputs("}}", o->f);
    if (r->graph_id != GGPROF_MODEL_NULL) {
        copies_offer(cp, r->pid, r->graph_id, r->split_id, start, start + dur, node, k->tid,
                     (const int64_t(*)[4]) ne_src, type_src, n_src);
    }
}

static int write_backends(const ggprof_model *l, out_t *o, tracks *tr, copies *cp) {
    size_t n = l->n_splits;
    for (size_t i = 0; i < l->n_rec; i++) n += l->rec[i].type != 1;
    item *v = malloc((n ? n : 1) * sizeof(*v));
    if (!v) return -1;
    n = 0;
    for (size_t i = 0; i < l->n_splits; i++) {
        const ggprof_model_split *s = &l->splits[i];
        v[n] = (item) { s->pid, s->sched_id, s->backend_id, s->start_ns, s->duration_ns, 0, n, s, NULL };
        n++;
    }
    for (size_t i = 0; i < l->n_rec; i++) {
        const ggprof_model_rec *r = &l->rec[i];
        if (r->type == 1) continue;
        v[n] = (item) { r->pid, r->sched_id, r->backend_id, r->start_ns, r->duration_ns, r->type == 0 ? 1 : 2, n, NULL, r };
        n++;
    }
    ggprof_sort(v, n, sizeof(*v), cmp_item);
    char b1[64];
    size_t i = 0;
    for (; i < n; i++) {
        const item *x = &v[i];
        int    kind = x->rec && x->rec->timing == GGPROF_TIMING_DEVICE ? TRACK_DEVICE : TRACK_BACKEND;
        track *k = track_place(tr, x->pid, kind, x->sched, x->backend, (uint64_t) x->start,
                               (uint64_t) x->start + (uint64_t) x->dur);
        if (!k) break;
        const char *bname = ggprof_model_backend_label(l, (int32_t) x->pid, x->sched, x->backend, b1, sizeof(b1));
        if (x->split) {
            write_split(o, k, x->split, bname);
        } else {
            write_record(o, k, l, x->rec, bname, cp);
        }
    }
    free(v);
    return i == n ? 0 : -1;
}

static int write_copies(const ggprof_model *l, out_t *o, tracks *tr, copies *cp) {
    char b2[32];
    for (size_t i = 0; i < cp->n; i++) {
        copy_rec *r          = &cp->v[i];
        const ggprof_model_rec *e = cp->rec[i];
        uint64_t start = (uint64_t) e->start_ns, dur = (uint64_t) e->duration_ns;
        track *k = track_place(tr, e->pid, TRACK_COPIES, 0, -1, start, start + dur);
        if (!k) return -1;
        r->tid           = k->tid;
        const char *name = l->names[e->name];
        begin_x(o, name ? name : "copy", "copy", k, start, dur);
        arg_str(o, "copy", name ? name : "copy", 1);
        char fused[256];
        const char *tensor = ggprof_model_rec_tensor(l, e);
        arg_str(o, "tensor", tensor ? tensor : ggprof_model_rec_extra(l, e, fused, sizeof(fused)), 0);
        put_graph_args(o, e->graph_id, e->split_id);
        fputs(",\"shape\":", o->f);
        put_ints(o->f, r->ne, 4);
        arg_str(o, "type", r->type < 0 ? "" : ggprof_model_type_name(l, (int32_t) e->pid, r->type, b2, sizeof(b2)), 0);
        arg_int(o, "bytes", e->bytes);
        if (e->wait_ns) arg_int(o, "offset", e->wait_ns);
        fputs("}}", o->f);
    }
    return 0;
}

static int write_graphs(sqlite3 *db, out_t *o, tracks *tr) {
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db,
                           "SELECT pid, sched_id, graph_id, start_ns, duration_ns, n_nodes, n_splits FROM graphs\n"
                           "  ORDER BY pid, sched_id, start_ns, duration_ns DESC",
                           -1, &st, NULL) != SQLITE_OK)
        return -1;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t  pid   = sqlite3_column_int64(st, 0);
        uint64_t start = (uint64_t) sqlite3_column_int64(st, 3);
        uint64_t dur   = (uint64_t) sqlite3_column_int64(st, 4);
        track   *k     = track_place(tr, pid, TRACK_GRAPHS, sqlite3_column_int64(st, 1), -1, start, start + dur);
        if (!k) break;
        char name[48];
        snprintf(name, sizeof(name), "graph %" PRId64, (int64_t) sqlite3_column_int64(st, 2));
        begin_x(o, name, "graph", k, start, dur);
        fprintf(o->f, "\"graph_id\":%" PRId64, (int64_t) sqlite3_column_int64(st, 2));
        arg_int(o, "sched_id", (int64_t) sqlite3_column_int64(st, 1));
        arg_int(o, "n_nodes", (int64_t) sqlite3_column_int64(st, 5));
        arg_int(o, "n_splits", (int64_t) sqlite3_column_int64(st, 6));
        fputs("}}", o->f);
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : -1;
}

/* Flow events (v1: "s" then "f"), each placed mid-slice so that it binds to that slice and no neighbour
 * ending or starting at the same instant; "bp":"e" makes the end bind to the op that encloses it. */
static int write_flows(out_t *o, const copies *cp) {
    int n = 0;
    for (size_t i = 0; i < cp->n; i++) {
        const copy_rec *r = &cp->v[i];
        if (!r->found || !r->tid) continue;
        n++;
        fprintf(o->f, ",\n{\"ph\":\"s\",\"name\":\"copy\",\"cat\":\"copy\",\"id\":%d,\"pid\":%" PRId64 ",\"tid\":%" PRId64 ",\"ts\":",
                n, r->pid, r->tid);
        put_ts(o, r->start + (r->end - r->start) / 2);
        fprintf(o->f, "}");
        fprintf(o->f, ",\n{\"ph\":\"f\",\"bp\":\"e\",\"name\":\"copy\",\"cat\":\"copy\",\"id\":%d,\"pid\":%" PRId64 ",\"tid\":%" PRId64 ",\"ts\":",
                n, r->pid, r->op_tid);
        put_ts(o, r->op_start + (r->op_end - r->op_start) / 2);
        fprintf(o->f, "}");
    }
    return n;
}

/* A counter per process and backend: the bytes of each kind it holds, after each allocation and free (what
 * `ggprof memory --timeline` lists). What was held before the trace's first record shows at its start. */
static int write_memory(sqlite3 *db, out_t *o) {
    ggprof_mem m;
    char       why[256];
    if (ggprof_mem_load(db, &m, why, sizeof(why)) != 0) return -1;
    int64_t(*held)[GGPROF_MEM_KINDS] = calloc(m.n_backends + 1, sizeof(*held));
    if (!held) {
        ggprof_mem_free(&m);
        return -1;
    }
    for (size_t i = 0; i < m.n_events; i++) {
        const ggprof_mevent *e = &m.events[i];
        size_t b = 0;
        while (b < m.n_backends && !(m.backends[b].pid == e->buf->pid && strcmp(m.backends[b].name, e->buf->name) == 0)) b++;
        if (b == m.n_backends) continue;
        held[b][e->buf->kind] += e->delta;
        /* several changes at one instant, or before the trace's start: only the last state is drawn */
        if (i + 1 < m.n_events && m.events[i + 1].buf->pid == e->buf->pid &&
            strcmp(m.events[i + 1].buf->name, e->buf->name) == 0 &&
            (m.events[i + 1].t_ns == e->t_ns || (uint64_t) m.events[i + 1].t_ns <= o->t0)) {
            continue;
        }
        char name[96];
        snprintf(name, sizeof(name), "memory %s", e->buf->name);
        put_raw(o->f, o->n_events++ ? ",\n{\"ph\":\"C\",\"name\":" : "\n{\"ph\":\"C\",\"name\":");
        ggprof_json_put(o->f, name, GGPROF_JSON_HTML);
        put_raw(o->f, ",\"cat\":\"memory\",\"pid\":");
        put_i64(o->f, e->buf->pid);
        put_raw(o->f, ",\"tid\":0,\"ts\":");
        put_ts(o, (uint64_t) e->t_ns);
        put_raw(o->f, ",\"args\":{");
        for (int k = 0; k < GGPROF_MEM_KINDS; k++) {
            arg_key(o, ggprof_mem_kind_names[k], k == 0);
            put_i64(o->f, held[b][k]);
        }
        put_raw(o->f, "}}");
    }
    free(held);
    ggprof_mem_free(&m);
    return 0;
}

/* ---------------------------------------------------------------- the whole run: accounting, calls, regions, idle */

typedef struct {
    ggprof_accounting    acc;
    ggprof_thread_slices th; /* the threads' slices (accounting.c) */
} run_data;

static void run_free(run_data *r) {
    ggprof_thread_slices_free(&r->th);
    ggprof_accounting_free(&r->acc);
}

/* report's accounting and the threads' slices of db. */
static int run_load(sqlite3 *db, run_data *r, char *why, size_t why_len) {
    memset(r, 0, sizeof(*r));
    if (ggprof_accounting_load(db, &r->acc, why, why_len) != 0) return -1;
    if (ggprof_thread_slices_load(db, &r->th, why, why_len) != 0) {
        ggprof_accounting_free(&r->acc);
        return -1;
    }
    return 0;
}

/* The earliest instant the run's slices show: a process's start comes before its first record. */
static uint64_t run_t0(const run_data *r, uint64_t t0) {
    for (size_t i = 0; i < r->acc.n_procs; i++) {
        const ggprof_acc_proc *p = &r->acc.procs[i];
        if (p->wall_ns > 0 && p->start_ns >= 0 && (uint64_t) p->start_ns < t0) t0 = (uint64_t) p->start_ns;
    }
    for (size_t i = 0; i < r->th.n; i++) {
        if ((uint64_t) r->th.v[i].start_ns < t0) t0 = (uint64_t) r->th.v[i].start_ns;
    }
    return t0;
}

/* The latest instant the file's slices show (ns): it chooses the time grid. */
static uint64_t run_t_end(const run_data *r, const ggprof_model *l) {
    uint64_t end = 0;
    /* unsigned: a hostile trace's times may overflow int64 when summed */
#define LATEST(a, d) \
    do { \
        uint64_t e_ = (uint64_t) (a) + (uint64_t) (d); \
        if (e_ > end) end = e_; \
    } while (0)
    for (size_t i = 0; i < l->n_rec; i++) LATEST(l->rec[i].start_ns, l->rec[i].duration_ns);
    for (size_t i = 0; i < l->n_splits; i++) LATEST(l->splits[i].start_ns, l->splits[i].duration_ns);
    for (size_t i = 0; i < l->n_graphs; i++) LATEST(l->graphs[i].start_ns, l->graphs[i].duration_ns);
    for (size_t i = 0; i < r->acc.n_procs; i++) LATEST(r->acc.procs[i].start_ns, r->acc.procs[i].wall_ns);
    for (size_t i = 0; i < r->th.n; i++) LATEST(r->th.v[i].start_ns, r->th.v[i].dur_ns);
#undef LATEST
    return end;
}

/* Each process's row "ggprof: where the time went": the accounting's categories laid on its wall time, tiling it. */
static int write_run(out_t *o, tracks *tr, const run_data *r) {
    for (size_t i = 0; i < r->acc.n_procs; i++) {
        const ggprof_acc_proc *p = &r->acc.procs[i];
        ggprof_acc_slice      *v = NULL;
        size_t                 n = 0;
        if (p->start_ns < 0) continue; /* times a trace made negative: no row */
        if (ggprof_accounting_slices(p, &v, &n) != 0) return -1;
        for (size_t j = 0; j < n; j++) {
            uint64_t a = (uint64_t) v[j].start_ns, b = (uint64_t) v[j].end_ns;
            track   *k = track_place(tr, p->pid, TRACK_RUN, 0, -1, a, b);
            if (!k) {
                free(v);
                return -1;
            }
            begin_x(o, v[j].name, "run", k, a, b - a);
            arg_str(o, "category", v[j].name, 1);
            put_raw(o->f, "}}");
        }
        free(v);
    }
    return 0;
}

static int write_threads(out_t *o, tracks *tr, const run_data *r) {
    for (size_t i = 0; i < r->th.n; i++) {
        const ggprof_thread_slice *t = &r->th.v[i];
        uint64_t                   a = (uint64_t) t->start_ns, d = (uint64_t) t->dur_ns;
        track             *k = track_place(tr, t->pid, TRACK_THREAD, 0, t->tid, a, a + d);
        if (!k) return -1;
        if (t->what == GGPROF_TS_REGION) {
            begin_x(o, t->name ? t->name : "region", "region", k, a, d);
            arg_str(o, "from", t->v[0] < 0 ? "llama.cpp" : "program", 1);
            arg_int(o, "depth", t->v[0]);
        } else if (t->what == GGPROF_TS_BATCH) {
            begin_x(o, t->name ? t->name : "llama_decode", "batch", k, a, d);
            arg_key(o, "batch_id", 1);
            put_i64(o->f, t->v[0]);
            arg_int(o, "tokens", t->v[1]);
            arg_int(o, "sequences", t->v[2]);
            arg_int(o, "outputs", t->v[3]);
            arg_int(o, "status", t->v[4]);
        } else {
            begin_x(o, "idle", "idle", k, a, d);
            arg_key(o, "tid", 1);
            put_i64(o->f, t->tid);
        }
        put_raw(o->f, "}}");
    }
    return 0;
}

static void write_metadata(sqlite3 *db, const ggprof_model *l, out_t *o, const tracks *tr) {
    sqlite3_stmt *exe = NULL;
    sqlite3_prepare_v2(db, "SELECT exe FROM processes WHERE pid = ?", -1, &exe, NULL);
    char buf[512], b1[64];
    for (size_t i = 0; i < tr->n; i++) {
        const track *k = &tr->v[i];
        int first = 1;
        for (size_t j = 0; j < i; j++) first &= tr->v[j].pid != k->pid;
        if (first) {
            const char *path = NULL;
            if (exe) {
                sqlite3_reset(exe);
                sqlite3_bind_int64(exe, 1, k->pid);
                if (sqlite3_step(exe) == SQLITE_ROW) path = (const char *) sqlite3_column_text(exe, 0);
            }
            const char *base = path && strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
            snprintf(buf, sizeof(buf), "%s", base && base[0] ? base : "process");
            fprintf(o->f, ",\n{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%" PRId64 ",\"tid\":0,\"args\":{\"name\":", k->pid);
            ggprof_json_put(o->f, buf, GGPROF_JSON_HTML);
            fprintf(o->f, "}},\n{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":%" PRId64
                          ",\"tid\":0,\"args\":{\"sort_index\":%zu}}",
                    k->pid, i);
        }
        if (k->kind == TRACK_BACKEND || k->kind == TRACK_DEVICE) {
            const char *bn = ggprof_model_backend_label(l, (int32_t) k->pid, k->sched, k->backend, b1, sizeof(b1));
            if (ggprof_model_scheds(l, (int32_t) k->pid) > 1) snprintf(buf, sizeof(buf), "%s (sched %" PRId64 ")", bn, k->sched);
            else snprintf(buf, sizeof(buf), "%s", bn);
            if (k->kind == TRACK_DEVICE) snprintf(buf + strlen(buf), sizeof(buf) - strlen(buf), " (device)");
        } else if (k->kind == TRACK_COPIES) {
            snprintf(buf, sizeof(buf), "copies");
        } else if (k->kind == TRACK_RUN) {
            snprintf(buf, sizeof(buf), "ggprof: where the time went");
        } else if (k->kind == TRACK_THREAD) {
            snprintf(buf, sizeof(buf), "thread %" PRId64, k->backend);
        } else {
            if (ggprof_model_scheds(l, (int32_t) k->pid) > 1) snprintf(buf, sizeof(buf), "graphs (sched %" PRId64 ")", k->sched);
            else snprintf(buf, sizeof(buf), "graphs");
        }
        if (k->sub) snprintf(buf + strlen(buf), sizeof(buf) - strlen(buf), " (overlap %d)", k->sub + 1);
        fprintf(o->f, ",\n{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%" PRId64 ",\"tid\":%" PRId64 ",\"args\":{\"name\":",
                k->pid, k->tid);
        ggprof_json_put(o->f, buf, GGPROF_JSON_HTML);
        /* Rows of a kind together, a backend's overlap rows right under it. */
        fprintf(o->f, "}},\n{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":%" PRId64 ",\"tid\":%" PRId64
                      ",\"args\":{\"sort_index\":%" PRId64 "}}",
                k->pid, k->tid,
                k->kind == TRACK_RUN      ? (int64_t) -2000000
                : k->kind == TRACK_THREAD ? (int64_t) -1000000 + (int64_t) i
                : k->kind == TRACK_DEVICE ? k->sched * 10000 + (k->backend + 1) * 64 + 32 + k->sub
                                          : (int64_t) k->kind * 1000000 + k->sched * 10000 + (k->backend + 1) * 64 + k->sub);
    }
    sqlite3_finalize(exe);
}

int ggprof_export_chrome(sqlite3 *db, const char *path, const ggprof_export_opts *opts, char *why, size_t why_len) {
    copies  cp;
    tracks  tr = { 0 };
    ggprof_model l;
    char what[600];
    snprintf(what, sizeof(what), "export: reading the records for '%s'", path);
    ggprof_model_sample sample;
    if (ggprof_model_load_sampled(db, &l, GGPROF_MODEL_EXPORT, what, opts->max_records, &sample, why, why_len) != 0) {
        return -1;
    }
    if (copies_load(&l, &cp) != 0) {
        snprintf(why, why_len, "cannot read the trace for '%s': out of memory", path);
        copies_free(&cp);
        ggprof_model_free(&l);
        return -1;
    }
    run_data run;
    char     rwhy[256];
    if (run_load(db, &run, rwhy, sizeof(rwhy)) != 0) {
        snprintf(why, why_len, "cannot read the trace for '%s': %s", path, rwhy);
        copies_free(&cp);
        ggprof_model_free(&l);
        return -1;
    }
    ggprof_outfile of; /* a new private file, renamed over path when whole (outfile.h) */
    FILE *f = ggprof_outfile_open(&of, path);
    if (!f) {
        snprintf(why, why_len, "cannot write '%s': %s", path, strerror(errno));
        copies_free(&cp);
        ggprof_model_free(&l);
        run_free(&run);
        return -1;
    }
    static char buf[1 << 20];
    setvbuf(f, buf, _IOFBF, sizeof(buf));
    out_t    o   = { f, run_t0(&run, (uint64_t) ggprof_model_t0(&l)), 0, 0 };
    uint64_t end = run_t_end(&run, &l);
    o.bits       = grid_bits(end > o.t0 ? (end - o.t0) / 1000 + 1 : 1);
    fprintf(f, "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"producer\":\"ggprof\",\"time_grid_bits\":%d,\"t0_ns\":", o.bits);
    if (sample.every > 1) {
        fprintf(f, "%" PRIu64 ",\"sampled\":{\"records\":%" PRId64 ",\"records_shown\":%" PRId64 ",\"one_graph_in\":%" PRId64
                   ",\"note\":\"the ops of one graph in every one_graph_in; every graph and split is shown\"}",
                o.t0, sample.records, sample.kept, sample.every);
        fputs("},\n\"traceEvents\":[", f);
        if (opts->sampled) opts->sampled(path, opts->max_records, sample.records, sample.kept, sample.every);
    } else {
        fprintf(f, "%" PRIu64 "},\n\"traceEvents\":[", o.t0);
    }
    int rc = write_backends(&l, &o, &tr, &cp);
    if (rc == 0) rc = write_copies(&l, &o, &tr, &cp);
    if (rc == 0) rc = write_graphs(db, &o, &tr);
    if (rc == 0) rc = write_run(&o, &tr, &run);
    if (rc == 0) rc = write_threads(&o, &tr, &run);
    if (rc == 0) rc = write_memory(db, &o);
    if (rc == 0) {
        if (o.n_events) write_flows(&o, &cp);
        write_metadata(db, &l, &o, &tr);
    }
    ggprof_model_free(&l);
    run_free(&run);
    fputs("\n]}\n", f);
    copies_free(&cp);
    tracks_free(&tr);
    if (rc != 0) {
        snprintf(why, why_len, "cannot read the trace for '%s': %s", path, sqlite3_errmsg(db));
        ggprof_outfile_close(&of, f, 1); /* what was at path stays */
        return -1;
    }
    if (ggprof_outfile_close(&of, f, 0) != 0) {
        snprintf(why, why_len, "cannot write '%s': %s", path, strerror(errno ? errno : EIO));
        return -1;
    }
    return 0;
}
