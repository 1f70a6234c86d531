/* ggprof export --html: one self-contained HTML timeline: the viewer (viewer/, embedded) and the trace's data. */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace_db.h"
#include "export.h"
#include "findings.h"
#include "model.h"
#include "memory.h"
#include "placement.h"
#include "outfile.h"
#include "roofline.h"
#include "sort.h"
#include "threads.h"
#include "trace.h"
#include "wire.h"
#include "hash.h"
#include "v3_format.h"

/* Made by the Makefile from viewer/ (see VIEWER_SRC): each NUL-terminated. */
extern const unsigned char ggprof_viewer_viewer_html[];
extern const unsigned char ggprof_viewer_viewer_css[];
extern const unsigned char ggprof_viewer_viewer_js[];

/* ---------------------------------------------------------------- growable text and string tables */

typedef struct {
    char  *p;
    size_t n, cap;
    int    oom;
} sbuf;

static void sb_put(sbuf *b, const char *s, size_t n) {
    if (b->oom) return;
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 1 << 16;
        while (cap < b->n + n + 1) cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) {
            b->oom = 1;
            return;
        }
        b->p   = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
}

/* Columns are strings of variable-length integers, 5 bits a character, most significant first: the last
 * character of a number comes from k_last, the others from k_more. Values are zigzag-coded (0, -1, 1, -2 ->
 * 0, 1, 2, 3). Against decimal JSON arrays this halves the page for a 1M-record trace and lets the viewer
 * decode straight into typed arrays: both are most of the time to first paint (tests/bench/html_first_paint.sh).
 * None of the characters needs escaping in JSON or HTML. viewer.js decodes them. */
static const char k_last[] = "0123456789ABCDEFGHIJKLMNOPQRSTUV";
static const char k_more[] = "WXYZabcdefghijklmnopqrstuvwxyz$%";

static void sb_var(sbuf *b, int64_t v) {
    uint64_t z = v < 0 ? ((uint64_t) (-(v + 1)) << 1) | 1 : (uint64_t) v << 1;
    char     tmp[16];
    size_t   p = sizeof(tmp);
    tmp[--p]   = k_last[z & 31];
    for (z >>= 5; z; z >>= 5) tmp[--p] = k_more[z & 31];
    sb_put(b, tmp + p, sizeof(tmp) - p);
}

typedef struct {
    char    **keys;
    uint32_t *slots; /* index + 1, 0 = empty */
    size_t    n, cap_keys, cap_slots;
    int       oom;
} intern;


/* The index of key, adding it if new (*is_new set); -1 when out of memory. */
static long intern_get(intern *t, const char *key, int *is_new) {
    if (is_new) *is_new = 0;
    if (t->oom) return -1;
    if ((t->n + 1) * 2 > t->cap_slots) {
        size_t cap = t->cap_slots ? t->cap_slots * 2 : 256;
        uint32_t *s = calloc(cap, sizeof(*s));
        if (!s) {
            t->oom = 1;
            return -1;
        }
        for (size_t i = 0; i < t->n; i++) {
            size_t p = ggprof_fnv_str(t->keys[i]) & (cap - 1);
            while (s[p]) p = (p + 1) & (cap - 1);
            s[p] = (uint32_t) i + 1;
        }
        free(t->slots);
        t->slots     = s;
        t->cap_slots = cap;
    }
    size_t p = ggprof_fnv_str(key) & (t->cap_slots - 1);
    while (t->slots[p]) {
        if (strcmp(t->keys[t->slots[p] - 1], key) == 0) return (long) t->slots[p] - 1;
        p = (p + 1) & (t->cap_slots - 1);
    }
    if (t->n == t->cap_keys) {
        size_t cap = t->cap_keys ? t->cap_keys * 2 : 256;
        char **k = realloc(t->keys, cap * sizeof(*k));
        if (!k) {
            t->oom = 1;
            return -1;
        }
        t->keys     = k;
        t->cap_keys = cap;
    }
    char *copy = strdup(key);
    if (!copy) {
        t->oom = 1;
        return -1;
    }
    t->keys[t->n] = copy;
    t->slots[p]   = (uint32_t) t->n + 1;
    if (is_new) *is_new = 1;
    return (long) t->n++;
}

static void intern_free(intern *t) {
    for (size_t i = 0; i < t->n; i++) free(t->keys[i]);
    free(t->keys);
    free(t->slots);
}

/* ---------------------------------------------------------------- what the viewer is given */

/* What the page shows is computed here, by the code the other views use: a record's layer is model.c's (what
 * `rollup --by layer` groups), an op's bytes read and written are the roofline model's for its group
 * (roofline.c, what `top-ops` divides by the time). The viewer only adds them up and draws them. */

typedef struct {
    int64_t  lane, name, shape, count;
    uint64_t total, min, max;
    double   rw;         /* bytes read + written (the roofline model), summed */
    int      rw_unknown; /* a record whose bytes the model does not know (or not an op): no bandwidth */
} stat_row;

typedef struct {
    int64_t  layer, name, count;
    uint64_t ns;
} heat_cell;

enum { C_T, C_D, C_TN, C_S, C_B, C_G, C_N, N_COLS };
static const char *const k_col_names[N_COLS] = { "t", "d", "tn", "s", "b", "g", "n" };

typedef struct {
    sbuf      col[N_COLS];
    sbuf      lanes, sigs;
    intern    names, tensors, shapes, sig_keys, stat_keys, heat_keys;
    int64_t  *sig_shape; /* signature -> its sources' shapes, the stats' third level */
    size_t    cap_sig_shape;
    int64_t  *sig_bytes; /* signature -> bytes of its first record: an OP's bytes follow from its output */
    int       bytes_vary; /* a record whose bytes differ from its signature's: else column b is left empty */
    size_t    cap_sig_bytes;
    stat_row *stats;
    heat_cell *heat;
    size_t    cap_stats, cap_heat;
    int64_t   n_records, n_shown, stride, n_lanes;
    int64_t   sample_records, sample_every; /* --max-records: the trace's records, and one graph in every k read */
    uint64_t  t0, t_end, total_ns;
    int       oom;
    ggprof_accounting acc;   /* the findings panel: report's accounting and findings (findings.c) */
    ggprof_findings   found;
    ggprof_thread_slices th; /* the threads' lanes: llama_decode calls, regions, idle (accounting.c) */
} model;

static void model_free(model *m) {
    for (int c = 0; c < N_COLS; c++) free(m->col[c].p);
    free(m->lanes.p);
    free(m->sigs.p);
    intern_free(&m->names);
    intern_free(&m->tensors);
    intern_free(&m->shapes);
    intern_free(&m->sig_keys);
    intern_free(&m->stat_keys);
    intern_free(&m->heat_keys);
    free(m->sig_shape);
    free(m->sig_bytes);
    free(m->stats);
    free(m->heat);
    ggprof_findings_free(&m->found);
    ggprof_accounting_free(&m->acc);
    ggprof_thread_slices_free(&m->th);
}

static void *grow(void *p, size_t *cap, size_t need, size_t size, int *oom) {
    if (need <= *cap) return p;
    size_t cap2 = *cap ? *cap * 2 : 256;
    while (cap2 < need) cap2 *= 2;
    void *q = realloc(p, cap2 * size);
    if (!q) {
        *oom = 1;
        return p;
    }
    memset((char *) q + *cap * size, 0, (cap2 - *cap) * size);
    *cap = cap2;
    return q;
}

/* A JSON string into a text buffer (the small tables are built in memory, then written at once). */
static void sb_str(sbuf *b, const char *s) {
    char  *mem = NULL;
    size_t len = 0;
    FILE  *f   = open_memstream(&mem, &len);
    if (!f) {
        b->oom = 1;
        return;
    }
    ggprof_json_put(f, s, GGPROF_JSON_HTML);
    if (fclose(f) != 0) b->oom = 1;
    else sb_put(b, mem, len);
    free(mem);
}


/* A row of the timeline: a record, or a split that has no OP or SYNC record (a backend whose ops ggprof cannot
 * time, a CPU split whose ticks did not match), shown as one "split" record (type 3) so that every backend
 * that computed appears. Rows go one lane per backend of a scheduler (and one under it for the ops its device
 * timed, timing 4: "Vulkan0 (device)"), one per process for its copies (after its backends); in each, in time
 * order. */
typedef struct {
    int64_t              pid, sched, backend, start, seq;
    int                  type, dev; /* dev: an op timed on the device (its own lane) */
    const ggprof_model_rec   *rec;
    const ggprof_model_split *split;
} row;

static int cmp_row(const void *a, const void *b) {
    const row *x = a, *y = b;
    if (x->pid != y->pid) return x->pid < y->pid ? -1 : 1;
    int cx = x->type == 1, cy = y->type == 1;
    if (cx != cy) return cx - cy;
    int64_t sx = cx ? 0 : x->sched, sy = cy ? 0 : y->sched, bx = cx ? 0 : x->backend, by = cy ? 0 : y->backend;
    if (sx != sy) return sx < sy ? -1 : 1;
    if (bx != by) return bx < by ? -1 : 1;
    if (x->dev != y->dev) return x->dev - y->dev;
    if (x->start != y->start) return x->start < y->start ? -1 : 1;
    return (x->seq > y->seq) - (x->seq < y->seq);
}

/* (pid, graph, split) of the OP and SYNC records, to find the splits that have none. */
static uint64_t split_key(int64_t pid, int64_t graph, int64_t split) {
    return ggprof_fnv_step(ggprof_fnv_step(ggprof_fnv_step(GGPROF_FNV_OFFSET, (uint64_t) pid), (uint64_t) graph),
                           (uint64_t) split);
}

/* The rows, in lane order; NULL when out of memory. */
static row *rows_of(const ggprof_model *l, size_t *n_rows) {
    size_t n_slot = 64;
    while (n_slot < 2 * (l->n_splits + 1)) n_slot *= 2;
    const ggprof_model_split **slot = calloc(n_slot, sizeof(*slot));
    row *v = malloc((l->n_rec + l->n_splits + 1) * sizeof(*v));
    if (!slot || !v) {
        free(slot);
        free(v);
        return NULL;
    }
    unsigned char *has = calloc(l->n_splits + 1, 1);
    if (!has) {
        free(slot);
        free(v);
        return NULL;
    }
    for (size_t i = 0; i < l->n_splits; i++) {
        const ggprof_model_split *s = &l->splits[i];
        if (s->graph_id == GGPROF_MODEL_NULL) continue; /* matches no record */
        size_t p = split_key(s->pid, s->graph_id, s->split_id) & (n_slot - 1);
        while (slot[p]) p = (p + 1) & (n_slot - 1);
        slot[p] = s;
    }
    size_t n = 0;
    for (size_t i = 0; i < l->n_rec; i++) {
        const ggprof_model_rec *r = &l->rec[i];
        v[n++] = (row) { r->pid, r->sched_id, r->backend_id, r->start_ns, r->seq, r->type,
                         r->timing == GGPROF_TIMING_DEVICE, r, NULL };
        if (r->type == 1 || r->graph_id == GGPROF_MODEL_NULL) continue;
        for (size_t p = split_key(r->pid, r->graph_id, r->split_id) & (n_slot - 1); slot[p]; p = (p + 1) & (n_slot - 1)) {
            const ggprof_model_split *s = slot[p];
            if (s->pid == r->pid && s->graph_id == r->graph_id && s->split_id == r->split_id) has[s - l->splits] = 1;
        }
    }
    for (size_t i = 0; i < l->n_splits; i++) {
        const ggprof_model_split *s = &l->splits[i];
        if (!has[i]) v[n++] = (row) { s->pid, s->sched_id, s->backend_id, s->start_ns, 0, 3, 0, NULL, s };
    }
    free(slot);
    free(has);
    ggprof_sort(v, n, sizeof(*v), cmp_row);
    *n_rows = n;
    return v;
}

/* The signature (op name and type, sources' shapes and types, output, the model's bytes) is the record's row of
 * the "sigs" table: [name, shapes, types, output, bytes, bytes read + written (-1: unknown, or not an op)], so
 * that a record needs only its signature's index. */
static int64_t sig_of(model *m, const char *ne, const char *ne_src, const char *type_src, int64_t out_type, int type,
                      long name, int64_t pid, const ggprof_model *l, int64_t bytes, double rw) {
    char key[4096];
    snprintf(key, sizeof(key), "%ld|%" PRId64 "|%s|%s|%s|%" PRId64 "|%.0f", name, pid, ne_src ? ne_src : "",
             type_src ? type_src : "", ne ? ne : "", out_type, rw);
    int is_new;
    long i = intern_get(&m->sig_keys, key, &is_new);
    if (i < 0 || !is_new) return i;
    int64_t shapes[GGPROF_MAX_SRC][4], types[GGPROF_MAX_SRC], out[4] = { 0 };
    int n_src = ggprof_db_ints(ne_src, &shapes[0][0], GGPROF_MAX_SRC * 4) / 4;
    int n_typ = ggprof_db_ints(type_src, types, GGPROF_MAX_SRC);
    if (type == 1 && n_src > 1) n_src = 1; /* a copy: the tensor copied */
    char sh[1024] = "", ty[512] = "", o[160] = "", one[96], b[32];
    size_t ps = 0, pt = 0;
    for (int s = 0; s < n_src; s++) {
        ggprof_fmt_ne(one, sizeof(one), shapes[s]);
        if (!one[0]) snprintf(one, sizeof(one), "[]");
        if (ps < sizeof(sh)) ps += (size_t) snprintf(sh + ps, sizeof(sh) - ps, "%s%s", s ? " \xc3\x97 " : "", one);
        if (pt < sizeof(ty))
            pt += (size_t) snprintf(ty + pt, sizeof(ty) - pt, "%s%s", s ? " \xc3\x97 " : "",
                                    s < n_typ && types[s] >= 0 ? ggprof_model_type_name(l, (int32_t) pid, types[s], b, sizeof(b)) : "?");
    }
    if (type == 0) {
        ggprof_db_ints(ne, out, 4);
        ggprof_fmt_ne(one, sizeof(one), out);
        snprintf(o, sizeof(o), "%s %s", one, out_type >= 0 ? ggprof_model_type_name(l, (int32_t) pid, out_type, b, sizeof(b)) : "");
    }
    long shape = intern_get(&m->shapes, sh, NULL);
    if (shape < 0) return -1;
    m->sig_shape = grow(m->sig_shape, &m->cap_sig_shape, (size_t) i + 1, sizeof(*m->sig_shape), &m->oom);
    if (m->oom) return -1;
    m->sig_shape[i] = shape;
    m->sig_bytes = grow(m->sig_bytes, &m->cap_sig_bytes, (size_t) i + 1, sizeof(*m->sig_bytes), &m->oom);
    if (m->oom) return -1;
    m->sig_bytes[i] = bytes;
    sb_put(&m->sigs, m->sigs.n ? ",[" : "[", m->sigs.n ? 2 : 1);
    char num[48];
    snprintf(num, sizeof(num), "%ld,%ld,", name, shape);
    sb_put(&m->sigs, num, strlen(num));
    sb_str(&m->sigs, ty);
    sb_put(&m->sigs, ",", 1);
    sb_str(&m->sigs, o);
    snprintf(num, sizeof(num), ",%" PRId64 ",%.0f]", bytes, rw < 0 ? -1.0 : rw);
    sb_put(&m->sigs, num, strlen(num));
    return i;
}

static void add_stat(model *m, int64_t lane, int64_t name, int64_t shape, uint64_t dur, double rw) {
    char key[64];
    snprintf(key, sizeof(key), "%" PRId64 ":%" PRId64 ":%" PRId64, lane, name, shape);
    int is_new;
    long i = intern_get(&m->stat_keys, key, &is_new);
    if (i < 0) return;
    m->stats = grow(m->stats, &m->cap_stats, (size_t) i + 1, sizeof(*m->stats), &m->oom);
    if (m->oom) return;
    stat_row *s = &m->stats[i];
    if (is_new) {
        *s = (stat_row){ lane, name, shape, 0, 0, dur, dur, 0, 0 };
    }
    s->count++;
    s->total += dur;
    if (rw < 0) s->rw_unknown = 1;
    else s->rw += rw;
    if (dur < s->min) s->min = dur;
    if (dur > s->max) s->max = dur;
}

static void add_heat(model *m, int64_t layer, int64_t name, uint64_t dur) {
    char key[48];
    snprintf(key, sizeof(key), "%" PRId64 ":%" PRId64, layer, name);
    int is_new;
    long i = intern_get(&m->heat_keys, key, &is_new);
    if (i < 0) return;
    m->heat = grow(m->heat, &m->cap_heat, (size_t) i + 1, sizeof(*m->heat), &m->oom);
    if (m->oom) return;
    if (is_new) m->heat[i] = (heat_cell){ layer, name, 0, 0 };
    m->heat[i].count++;
    m->heat[i].ns += dur;
}

static void finish_lane(model *m, const char *name, int64_t pid, int is_copy, int64_t n) {
    if (m->lanes.n) sb_put(&m->lanes, ",", 1);
    sb_put(&m->lanes, "{\"name\":", 8);
    sb_str(&m->lanes, name);
    char tail[96];
    snprintf(tail, sizeof(tail), ",\"pid\":%" PRId64 ",\"kind\":\"%s\",\"n\":%" PRId64 "}", pid, is_copy ? "copies" : "backend", n);
    sb_put(&m->lanes, tail, strlen(tail));
}

/* Bytes one execution of record r reads and writes, as the roofline model costs its group (what top-ops counts);
 * -1 when the model does not know them, and for what is not an OP record. */
static double rw_of(const ggprof_rl_groups *g, const ggprof_model_rec *r) {
    const ggprof_rl_group *x = r && r->type == 0 ? ggprof_rl_group_of(g, r->seq) : NULL;
    return x && x->cost.bytes_known ? x->cost.bytes_read + x->cost.bytes_written : -1;
}

/* Reads every record once: the sampled ones into columns, all of them into the stats and the heat map. */
static int build(const ggprof_model *l, const ggprof_rl_groups *g, model *m, long long max_records) {
    size_t n_rows;
    row *rows = rows_of(l, &n_rows);
    if (!rows) return -1;
    m->n_records = (int64_t) n_rows;
    int64_t t0 = INT64_MAX, n_pids = 0;
    /* The time axis covers each process's whole run (its "where the time went" lane): from the earliest start, as
     * export --chrome's origin, to the latest end. */
    for (size_t i = 0; i < m->acc.n_procs; i++) {
        const ggprof_acc_proc *p = &m->acc.procs[i];
        if (p->start_ns < 0 || p->end_ns <= p->start_ns) continue; /* times a trace made negative: no lane */
        if (p->start_ns < t0) t0 = p->start_ns;
        if ((uint64_t) p->end_ns > m->t_end) m->t_end = (uint64_t) p->end_ns;
    }
    for (size_t i = 0; i < m->th.n; i++) { /* the threads' slices: llama.cpp's loading may come before any record */
        const ggprof_thread_slice *t = &m->th.v[i];
        if (t->start_ns < t0) t0 = t->start_ns;
        if ((uint64_t) (t->start_ns + t->dur_ns) > m->t_end) m->t_end = (uint64_t) (t->start_ns + t->dur_ns);
    }
    for (size_t i = 0; i < n_rows; i++) {
        if (rows[i].start < t0) t0 = rows[i].start;
        n_pids += i == 0 || rows[i].pid != rows[i - 1].pid; /* rows come by process */
    }
    m->t0     = (uint64_t) (t0 == INT64_MAX ? 0 : t0);
    m->stride = max_records > 0 && m->n_records > max_records ? (m->n_records + max_records - 1) / max_records : 1;
    int have_lane = 0, lane_copy = 0, lane_dev = 0;
    int64_t lane_pid = 0, lane_sched = 0, lane_backend = 0, lane_n = 0, prev_end = 0, prev_g = 0, seen = 0;
    char lane_name[160] = "";
    size_t i = 0;
    for (; i < n_rows && !m->oom; i++) {
        const row *x         = &rows[i];
        const ggprof_model_rec *r = x->rec;
        int      type        = x->type;
        int64_t  pid         = x->pid;
        int64_t  sched       = x->sched;
        int64_t  backend     = x->backend;
        uint64_t start       = (uint64_t) x->start;
        uint64_t dur         = (uint64_t) (r ? r->duration_ns : x->split->duration_ns);
        uint64_t bytes       = (uint64_t) (r ? r->bytes : 0);
        int      is_copy = type == 1;
        if (!have_lane || pid != lane_pid || is_copy != lane_copy ||
            (!is_copy && (sched != lane_sched || backend != lane_backend || x->dev != lane_dev))) {
            if (have_lane) finish_lane(m, lane_name, lane_pid, lane_copy, lane_n);
            have_lane = 1;
            lane_pid = pid, lane_copy = is_copy, lane_sched = sched, lane_backend = backend, lane_n = 0;
            lane_dev = x->dev;
            prev_end = (int64_t) m->t0, prev_g = 0;
            m->n_lanes++;
            char bbuf[32];
            const char *bn = ggprof_model_backend_label(l, (int32_t) pid, sched, backend, bbuf, sizeof(bbuf));
            size_t p = (size_t) snprintf(lane_name, sizeof(lane_name), "%s", is_copy ? "copies" : bn);
            if (!is_copy && ggprof_model_scheds(l, (int32_t) pid) > 1 && p < sizeof(lane_name))
                p += (size_t) snprintf(lane_name + p, sizeof(lane_name) - p, " (sched %" PRId64 ")", sched);
            if (x->dev && p < sizeof(lane_name)) p += (size_t) snprintf(lane_name + p, sizeof(lane_name) - p, " (device)");
            if (n_pids > 1 && p < sizeof(lane_name))
                snprintf(lane_name + p, sizeof(lane_name) - p, " \xc2\xb7 pid %" PRId64, pid);
        }
        int64_t lane = m->n_lanes - 1;
        const char *nm = r ? l->names[r->name] : "split";
        char key[96];
        snprintf(key, sizeof(key), "%d:%s", type, nm ? nm : "unknown");
        long name = intern_get(&m->names, key, NULL);
        const char *tensor = r ? ggprof_model_rec_tensor(l, r) : NULL;
        long tidx = intern_get(&m->tensors, tensor ? tensor : "", NULL);
        if (name < 0 || tidx < 0) break;
        double rw = rw_of(g, r);
        int64_t sig = r ? sig_of(m, ggprof_model_rec_ne(l, r), ggprof_model_rec_ne_src(l, r), ggprof_model_rec_type_src(l, r),
                                 ggprof_model_rec_out_type(l, r), type, name, pid, l, (int64_t) bytes, rw)
                        : sig_of(m, "[0, 0, 0, 0]", "[]", "[]", -1, type, name, pid, l, 0, -1);
        if (sig < 0) break;
        m->total_ns += dur;
        if (start + dur > m->t_end) m->t_end = start + dur;
        if (type == 0) add_heat(m, r->layer, name, dur); /* model.c's layer: rollup --by layer's */
        add_stat(m, lane, name, m->sig_shape[sig], dur, rw);
        if (seen++ % m->stride) continue;
        int64_t graph = r ? r->graph_id : x->split->graph_id;
        int64_t g     = graph == GGPROF_MODEL_NULL ? -1 : graph;
        /* a lane's records mostly tile: the gap after the previous one is 0, one character */
        sb_var(&m->col[C_T], (int64_t) (start - (uint64_t) prev_end)); /* wraps on a damaged trace */
        sb_var(&m->col[C_D], (int64_t) dur);
        sb_var(&m->col[C_TN], tidx);
        sb_var(&m->col[C_S], sig);
        sb_var(&m->col[C_B], (int64_t) (bytes - (uint64_t) m->sig_bytes[sig]));
        m->bytes_vary |= (int64_t) bytes != m->sig_bytes[sig];
        sb_var(&m->col[C_G], (int64_t) ((uint64_t) g - (uint64_t) prev_g));
        sb_var(&m->col[C_N], r ? (r->node_index == GGPROF_MODEL_NULL ? 0 : r->node_index) : x->split->split_id);
        prev_end = (int64_t) (start + dur), prev_g = g;
        lane_n++;
        m->n_shown++;
    }
    if (have_lane) finish_lane(m, lane_name, lane_pid, lane_copy, lane_n);
    free(rows);
    for (int c = 0; c < N_COLS; c++) m->oom |= m->col[c].oom;
    m->oom |= m->lanes.oom | m->sigs.oom | m->names.oom | m->tensors.oom | m->shapes.oom | m->sig_keys.oom;
    return i == n_rows && !m->oom ? 0 : -1;
}

static void put_col(FILE *f, const char *key, const sbuf *b, int first) {
    fprintf(f, "%s\"%s\":\"", first ? "" : ",\n", key);
    if (b->n) fwrite(b->p, 1, b->n, f);
    fputs("\"", f);
}

static void put_table(FILE *f, const char *key, const intern *t, int split_type) {
    fprintf(f, ",\n\"%s\":[", key);
    for (size_t i = 0; i < t->n; i++) {
        if (i) putc(',', f);
        if (split_type) { /* "0:MUL_MAT" -> ["MUL_MAT",0] */
            const char *colon = strchr(t->keys[i], ':');
            putc('[', f);
            ggprof_json_put(f, colon ? colon + 1 : t->keys[i], GGPROF_JSON_HTML);
            fprintf(f, ",%d]", atoi(t->keys[i]));
        } else {
            ggprof_json_put(f, t->keys[i], GGPROF_JSON_HTML);
        }
    }
    putc(']', f);
}

/* A memory track per process and backend: what it holds after each change (`ggprof memory --timeline`, from t0: what
 * was held before shows at 0), and its process's peak, which the viewer marks. */
static void put_memory(FILE *f, sqlite3 *db, uint64_t t0) {
    ggprof_mem mem;
    char       why[256];
    /* A trace without memory (older, or a JSON import) gets no key: its page is what it was before memory. */
    if (ggprof_mem_load(db, &mem, why, sizeof(why)) != 0 || !mem.present) return;
    fputs(",\n\"memory\":[", f);
    for (size_t b = 0; b < mem.n_backends; b++) {
        const ggprof_mbackend *bk = &mem.backends[b];
        const ggprof_mproc    *p  = NULL;
        for (size_t i = 0; i < mem.n_procs && !p; i++) {
            if (mem.procs[i].pid == bk->pid) p = &mem.procs[i];
        }
        char name[160];
        snprintf(name, sizeof(name), "memory %s (pid %d)", bk->name, (int) bk->pid);
        fprintf(f, "%s{\"name\":", b ? ",\n" : "");
        ggprof_json_put(f, name, GGPROF_JSON_HTML);
        int64_t at_peak = 0;
        for (int k = 0; k < GGPROF_MEM_KINDS; k++) at_peak += bk->at_peak[k];
        fprintf(f, ",\"max\":%" PRId64 ",\"at_peak\":%" PRId64 ",\"peak_t\":%" PRId64 ",\"t\":[", bk->max_held, at_peak,
                p && (uint64_t) p->peak_ns > t0 ? p->peak_ns - (int64_t) t0 : 0);
        int n = 0;
        for (size_t i = 0; i < mem.n_events; i++) {
            const ggprof_mevent *e = &mem.events[i];
            if (e->buf->pid != bk->pid || strcmp(e->buf->name, bk->name) != 0) continue;
            fprintf(f, "%s%" PRId64, n++ ? "," : "", (uint64_t) e->t_ns > t0 ? e->t_ns - (int64_t) t0 : 0);
        }
        fputs("],\"v\":[", f);
        n = 0;
        for (size_t i = 0; i < mem.n_events; i++) {
            const ggprof_mevent *e = &mem.events[i];
            if (e->buf->pid != bk->pid || strcmp(e->buf->name, bk->name) != 0) continue;
            fprintf(f, "%s%" PRId64, n++ ? "," : "", e->held_backend);
        }
        fputs("]}", f);
    }
    fputs("]", f);
    ggprof_mem_free(&mem);
}

/* The findings panel: each process's wall time in categories and the findings ranked by the time at stake, the
 * objects `report --format json` writes ("accounting", "findings"), computed by the same functions (find_all). */
static void put_findings(FILE *f, const model *m) {
    fputs(",\n\"accounting\":", f);
    ggprof_accounting_json(f, &m->acc, "", GGPROF_JSON_HTML);
    fputs(",\n\"findings\":", f);
    ggprof_findings_json(f, &m->found, "", GGPROF_JSON_HTML);
}

/* Each process's lane "where the time went": the accounting's categories laid on its wall time by
 * ggprof_accounting_slices (the slices export --chrome's run row shows), times from t0: [{"pid", "start", "wall_ns",
 * "cats": [category names], "t": [slice starts], "d": [durations], "c": [category of each: an index into cats]}]. */
static int put_run(FILE *f, const model *m) {
    fputs(",\n\"run\":[", f);
    int first = 1;
    for (size_t i = 0; i < m->acc.n_procs; i++) {
        const ggprof_acc_proc *p = &m->acc.procs[i];
        ggprof_acc_slice      *v = NULL;
        size_t                 n = 0;
        if (p->start_ns < 0 || p->end_ns <= p->start_ns) continue; /* as build(): no lane */
        if (ggprof_accounting_slices(p, &v, &n) != 0) return -1;
        /* the categories in report's order, then "other" where the slices use it and report has none */
        const char *cats[GGPROF_ACC_MAX_CATS + 1];
        size_t      n_cats = 0;
        for (size_t k = 0; k < p->n_cats; k++) cats[n_cats++] = p->cats[k].name;
        int has_other = 0;
        for (size_t k = 0; k < n_cats; k++) has_other |= strcmp(cats[k], "other") == 0;
        if (!has_other) cats[n_cats++] = "other";
        fprintf(f, "%s{\"pid\":%d,\"start\":%" PRId64 ",\"wall_ns\":%" PRId64 ",\"cats\":[", first ? "" : ",\n", (int) p->pid,
                p->start_ns - (int64_t) m->t0, p->wall_ns);
        first = 0;
        for (size_t k = 0; k < n_cats; k++) {
            if (k) putc(',', f);
            ggprof_json_put(f, cats[k], GGPROF_JSON_HTML);
        }
        static const char *const key[] = { "t", "d", "c" };
        for (int c = 0; c < 3; c++) {
            fprintf(f, "],\"%s\":[", key[c]);
            for (size_t j = 0; j < n; j++) {
                int64_t x = v[j].start_ns - (int64_t) m->t0; /* within [start_ns, end_ns]: t0 <= start_ns */
                if (c == 1) x = v[j].end_ns - v[j].start_ns;
                if (c == 2) {
                    x = (int64_t) n_cats - 1; /* "other" when it is none of p's */
                    for (size_t k = 0; k < n_cats; k++) {
                        if (v[j].name == cats[k] || strcmp(v[j].name, cats[k]) == 0) {
                            x = (int64_t) k;
                            break;
                        }
                    }
                }
                fprintf(f, "%s%" PRId64, j ? "," : "", x);
            }
        }
        fputs("]}", f);
        free(v);
    }
    fputs("]", f);
    return 0;
}

/* Each thread's lane: its llama_decode calls, regions and idle spans as ggprof_thread_slices_load gives them (the
 * slices of export --chrome's thread rows), by pid, tid, start, longest first, times from t0: [{"pid", "tid", "t":
 * [starts], "d": [durations], "w": [0 region, 1 batch, 2 idle], "n": [name: an index into "thread_names", -1 none],
 * "v": [region: [depth]; batch: [batch_id, tokens, sequences, outputs, status]; idle: []]}]. */
static int put_threads(FILE *f, const model *m) {
    intern names = { 0 };
    fputs(",\n\"threads\":[", f);
    for (size_t i = 0, j; i < m->th.n; i = j) {
        const ggprof_thread_slice *a = &m->th.v[i];
        for (j = i; j < m->th.n && m->th.v[j].pid == a->pid && m->th.v[j].tid == a->tid;) j++;
        fprintf(f, "%s{\"pid\":%" PRId64 ",\"tid\":%" PRId64, i ? ",\n" : "", a->pid, a->tid);
        static const char *const key[] = { "t", "d", "w", "n", "v" };
        for (int c = 0; c < 5; c++) {
            fprintf(f, ",\"%s\":[", key[c]);
            for (size_t k = i; k < j; k++) {
                const ggprof_thread_slice *t = &m->th.v[k];
                if (k > i) putc(',', f);
                if (c == 0) fprintf(f, "%" PRId64, t->start_ns - (int64_t) m->t0); /* build(): t0 <= every start */
                else if (c == 1) fprintf(f, "%" PRId64, t->dur_ns);
                else if (c == 2) fprintf(f, "%d", t->what);
                else if (c == 3) fprintf(f, "%ld", t->name ? intern_get(&names, t->name, NULL) : -1L);
                else {
                    int nv = t->what == GGPROF_TS_REGION ? 1 : t->what == GGPROF_TS_BATCH ? 5 : 0;
                    putc('[', f);
                    for (int x = 0; x < nv; x++) fprintf(f, "%s%" PRId64, x ? "," : "", t->v[x]);
                    putc(']', f);
                }
            }
            putc(']', f);
        }
        putc('}', f);
    }
    putc(']', f);
    put_table(f, "thread_names", &names, 0);
    int oom = names.oom;
    intern_free(&names);
    return oom ? -1 : 0;
}

/* report's accounting and findings of db, with the roofs given (--roof: below_roof), and the threads' slices, into
 * m. */
static int find_all(sqlite3 *db, model *m, const ggprof_roofs *roofs, char *why, size_t why_len) {
    if (ggprof_accounting_load(db, &m->acc, why, why_len) != 0) return -1;
    if (ggprof_thread_slices_load(db, &m->th, why, why_len) != 0) {
        return -1;
    }
    return ggprof_findings_run(db, &m->acc, roofs, &m->found, why, why_len);
}

static int put_data(FILE *f, sqlite3 *db, const model *m) {
    sqlite3_stmt *st = NULL;
    char title[512] = "ggprof trace";
    if (sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE key = 'command'", -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
        snprintf(title, sizeof(title), "%s", (const char *) sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    fputs("{\"format\":\"ggprof-viewer\",\"version\":1,\"title\":", f);
    ggprof_json_put(f, title, GGPROF_JSON_HTML);
    fprintf(f,
            ",\n\"t0_ns\":\"%" PRIu64 "\",\"span_ns\":%" PRIu64 ",\"total_ns\":%" PRIu64 ",\"n_records\":%" PRId64
            ",\"n_shown\":%" PRId64 ",\"stride\":%" PRId64,
            m->t0, m->t_end > m->t0 ? m->t_end - m->t0 : 0, m->total_ns, m->n_records, m->n_shown, m->stride);
    if (m->sample_every > 1) {
        fprintf(f, ",\"sampled\":{\"records\":%" PRId64 ",\"one_graph_in\":%" PRId64 "}", m->sample_records, m->sample_every);
    }
    /* record's capture windows, from t0 (none for a trace recorded start to end, or of an older ggprof) */
    fputs(",\n\"windows\":[", f);
    if (sqlite3_prepare_v2(db, "SELECT start_ns, end_ns, opened_by, closed_by FROM windows WHERE NOT (opened_by = 'start'"
                               " AND closed_by = 'exit') OR (SELECT count(*) FROM windows) > 1 ORDER BY start_ns",
                           -1, &st, NULL) == SQLITE_OK) {
        for (int n = 0; sqlite3_step(st) == SQLITE_ROW; n++) {
            fprintf(f, "%s[%" PRId64 ",%" PRId64 ",", n ? "," : "", (int64_t) sqlite3_column_int64(st, 0) - (int64_t) m->t0,
                    (int64_t) sqlite3_column_int64(st, 1) - (int64_t) m->t0);
            ggprof_json_put(f, (const char *) sqlite3_column_text(st, 2), GGPROF_JSON_HTML);
            putc(',', f);
            ggprof_json_put(f, (const char *) sqlite3_column_text(st, 3), GGPROF_JSON_HTML);
            putc(']', f);
        }
    }
    sqlite3_finalize(st);
    fputs("]", f);
    ggprof_placement_html(f, db);
    fputs(",\n\"lanes\":[", f);
    if (m->lanes.n) fwrite(m->lanes.p, 1, m->lanes.n, f);
    fputs("]", f);
    put_table(f, "names", &m->names, 1);
    put_table(f, "tensors", &m->tensors, 0);
    put_table(f, "shapes", &m->shapes, 0);
    fputs(",\n\"sigs\":[", f);
    if (m->sigs.n) fwrite(m->sigs.p, 1, m->sigs.n, f);
    fputs("],\n\"cols\":{", f);
    static const sbuf none;
    for (int c = 0; c < N_COLS; c++) put_col(f, k_col_names[c], c == C_B && !m->bytes_vary ? &none : &m->col[c], c == 0);
    fputs("},\n\"stats\":{", f);
    /* rw: bytes read + written under the roofline model, summed; -1 where a record's are unknown or it is no op */
    static const char *const sk[] = { "lane", "k", "shape", "count", "total", "min", "max", "rw" };
    for (int c = 0; c < 8; c++) {
        fprintf(f, "%s\"%s\":[", c ? ",\n" : "", sk[c]);
        for (size_t i = 0; i < m->stat_keys.n; i++) {
            const stat_row *s = &m->stats[i];
            if (c == 7) {
                fprintf(f, "%s%.0f", i ? "," : "", s->rw_unknown ? -1.0 : s->rw);
                continue;
            }
            int64_t v[7] = { s->lane, s->name, s->shape, s->count, (int64_t) s->total, (int64_t) s->min, (int64_t) s->max };
            fprintf(f, "%s%" PRId64, i ? "," : "", v[c]);
        }
        fputs("]", f);
    }
    /* per layer (model.c's; -1: none) and op: OP records and their time */
    fputs("},\n\"heat\":{", f);
    static const char *const hk[] = { "layer", "k", "n", "ns" };
    for (int c = 0; c < 4; c++) {
        fprintf(f, "%s\"%s\":[", c ? "," : "", hk[c]);
        for (size_t i = 0; i < m->heat_keys.n; i++) {
            const heat_cell *h = &m->heat[i];
            int64_t v[4] = { h->layer, h->name, h->count, (int64_t) h->ns };
            fprintf(f, "%s%" PRId64, i ? "," : "", v[c]);
        }
        fputs("]", f);
    }
    fputs("}", f);
    put_memory(f, db, m->t0);
    put_findings(f, m);
    int rc = put_run(f, m);
    if (rc == 0) rc = put_threads(f, m);
    fputs("}", f);
    return rc;
}

/* viewer.html names where the rest goes: <!--ggprof:css-->, <!--ggprof:data-->, <!--ggprof:js-->. */
static int put_page(FILE *f, sqlite3 *db, const model *m) {
    static const char *const marks[] = { "<!--ggprof:css-->", "<!--ggprof:data-->", "<!--ggprof:js-->" };
    const char *p = (const char *) ggprof_viewer_viewer_html;
    for (;;) {
        const char *next = NULL;
        int which = -1;
        for (int i = 0; i < 3; i++) {
            const char *q = strstr(p, marks[i]);
            if (q && (!next || q < next)) next = q, which = i;
        }
        if (!next) {
            fputs(p, f);
            return 0;
        }
        fwrite(p, 1, (size_t) (next - p), f);
        if (which == 0) {
            fputs("<style>\n", f);
            fputs((const char *) ggprof_viewer_viewer_css, f);
            fputs("</style>", f);
        } else if (which == 1) {
            fputs("<script id=\"ggprof-data\" type=\"application/json\">", f);
            if (put_data(f, db, m) != 0) return -1;
            fputs("</script>", f);
        } else {
            fputs("<script>\n", f);
            fputs((const char *) ggprof_viewer_viewer_js, f);
            fputs("</script>", f);
        }
        p = next + strlen(marks[which]);
    }
}

int ggprof_export_html(sqlite3 *db, const char *path, const ggprof_export_opts *o, char *why, size_t why_len) {
    model      m;
    memset(&m, 0, sizeof(m));
    ggprof_model l;
    char what[600];
    snprintf(what, sizeof(what), "export: reading the records for '%s'", path);
    ggprof_model_sample sample;
    if (ggprof_model_load_sampled(db, &l, GGPROF_MODEL_EXPORT, what, o->max_records, &sample, why, why_len) != 0) {
        return -1;
    }
    m.sample_records = sample.records, m.sample_every = sample.every;
    if (sample.every > 1 && o->sampled) o->sampled(path, o->max_records, sample.records, sample.kept, sample.every);
    ggprof_rl_groups g;
    char gwhy[512];
    /* a sample's OP records only: each record's group costs 12 bytes */
    int64_t  n_want = 0;
    uint8_t *want   = NULL;
    if (sample.every > 1) {
        for (size_t i = 0; i < l.n_rec; i++) {
            if (l.rec[i].seq >= n_want) n_want = l.rec[i].seq + 1;
        }
        want = calloc((size_t) (n_want + 7) / 8 + 1, 1);
        for (size_t i = 0; want && i < l.n_rec; i++) {
            if (l.rec[i].type == 0 && l.rec[i].seq >= 0) want[l.rec[i].seq >> 3] |= (uint8_t) (1u << (l.rec[i].seq & 7));
        }
    }
    int got = sample.every > 1 && !want ? -1
            : want ? ggprof_rl_groups_load_some(db, &g, want, n_want, gwhy, sizeof(gwhy))
                   : ggprof_rl_groups_load_records(db, &g, gwhy, sizeof(gwhy));
    if (got != 0 && !want && sample.every > 1) snprintf(gwhy, sizeof(gwhy), "out of memory");
    free(want);
    if (got != 0) {
        snprintf(why, why_len, "cannot read the trace for '%s': %s", path, gwhy);
        ggprof_model_free(&l);
        return -1;
    }
    char fwhy[256];
    if (find_all(db, &m, &o->roofs, fwhy, sizeof(fwhy)) != 0) { /* before build: the processes' runs set the axis */
        snprintf(why, why_len, "cannot read the trace for '%s': %s", path, fwhy);
        model_free(&m);
        ggprof_rl_groups_free(&g);
        ggprof_model_free(&l);
        return -1;
    }
    if (build(&l, &g, &m, o->html_max_records) != 0) {
        snprintf(why, why_len, "cannot read the trace for '%s': out of memory", path);
        model_free(&m);
        ggprof_rl_groups_free(&g);
        ggprof_model_free(&l);
        return -1;
    }
    ggprof_rl_groups_free(&g);
    ggprof_model_free(&l);
    ggprof_outfile of; /* a new private file, renamed over path when whole (outfile.h) */
    FILE *f = ggprof_outfile_open(&of, path);
    if (!f) {
        snprintf(why, why_len, "cannot write '%s': %s", path, strerror(errno));
        model_free(&m);
        return -1;
    }
    static char buf[1 << 20];
    setvbuf(f, buf, _IOFBF, sizeof(buf));
    int bad = put_page(f, db, &m) != 0;
    model_free(&m);
    if (bad) {
        ggprof_outfile_close(&of, f, 1);
        snprintf(why, why_len, "cannot write '%s': out of memory", path);
        return -1;
    }
    if (ggprof_outfile_close(&of, f, 0) != 0) {
        snprintf(why, why_len, "cannot write '%s': %s", path, strerror(errno ? errno : EIO));
        return -1;
    }
    return 0;
}
