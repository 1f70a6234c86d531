/* ggprof diff: two traces aligned op by op, each change judged against the spread of its repetitions. */
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "progress.h"
#include "sort.h"
#include "cli.h"
#include "analyzer_commands.h"
#include "findings.h"
#include "memory.h"
#include "output.h"
#include "trace.h"
#include "model.h"
#include "hash.h"
#include "trace_db.h"
#include "v3_format.h"
#include "wire.h"

const char ggprof_usage_diff[] =
    "usage: ggprof diff A B " GGPROF_HELP_SYNOPSIS "\n"
    "\n"
    "Aligns the records of traces A and B by phase (prompt, generation), op, source shapes and types,\n"
    "backend name and tensor name (which keeps the layer: Qcur-3). For each aligned group: its time in A\n"
    "and in B (ms), the change (ms; and % of the median time per graph), the noise bound (%) and a verdict:\n"
    "slower or faster when the medians of the group's per-graph times differ by more than 3 standard errors\n"
    "(from their median absolute deviation), noise when not, few when a run has fewer than 3 graphs of it.\n"
    "Sections: time per token by phase, then by op, by layer, the N groups that changed most (ms), the\n"
    "groups present in one run only, and report's findings (docs/findings.md) that appeared in B or are gone,\n"
    "by rule and the op, layer and backend they name, with the time at stake in each run.\n"
    GGPROF_HELP_OPTIONS
    "Exit status: 0; 1 when --fail-above tripped or on an internal error; 2 for a usage mistake.\n"
    "Rules and statistics: docs/rollups-and-diff.md.\n";

/* A change is beyond noise when the medians differ by more than Z standard errors of their difference; the
 * standard error of a median is 1.2533 sigma / sqrt(n), sigma estimated as 1.4826 MAD (robust to the slow
 * first token and to preemption on a shared machine). */
#define NOISE_Z       3.0
#define MIN_SAMPLES   3

/* ------------------------------------------------------------ output columns */

enum { C_PHASE, C_OP, C_TENSOR, C_LAYER, C_SHAPES, C_TYPES, C_BACKEND, C_NA, C_NB, C_AMS, C_BMS, C_DELTA, C_CHANGE,
       C_NOISE, C_VERDICT, C_FROM, C_RULE, C_ASTAKE, C_BSTAKE, N_COLS };

/* Every column any section shows, in the order they are shown; CSV has them all, after a "section" column. */
static const ggprof_col k_cols[N_COLS] = {
    { "phase", "phase", NULL, 0 },
    { "op", "op", NULL, 0 },
    { "tensor", "tensor", NULL, GGPROF_COL_FLEX },
    { "layer", "layer", NULL, 0 },
    { "shapes", "shapes", NULL, GGPROF_COL_FLEX },
    { "types", "types", NULL, GGPROF_COL_NO_TABLE },
    { "backend", "backend", NULL, 0 },
    { "n_a", "n_a", NULL, 0 },
    { "n_b", "n_b", NULL, 0 },
    { "a_ms", "a_ms", "%.3f", 0 },
    { "b_ms", "b_ms", "%.3f", 0 },
    { "delta_ms", "delta_ms", "%.3f", 0 },
    { "change%", "change_pct", "%.1f", 0 },
    { "noise%", "noise_pct", "%.1f", 0 },
    { "verdict", "verdict", NULL, 0 },
    { "from", "from", NULL, 0 },
    { "rule", "rule", NULL, 0 },
    { "a_at_stake_ms", "a_at_stake_ms", "%.3f", 0 },
    { "b_at_stake_ms", "b_at_stake_ms", "%.3f", 0 },
};
static const ggprof_col k_section_col = { "section", "section", NULL, 0 };

/* Diff tables are wider than a terminal's 80 columns; this keeps a group's row on one line of a wide one. */
#define TABLE_WIDTH 160

/* ------------------------------------------------------------ groups and their per-graph samples */

typedef struct {
    double *v;
    size_t  n, cap;
    double  total;           /* ns */
    int64_t last_pid, last_graph; /* the graph of v[n - 1]: rows come graph by graph */
} samples;

typedef struct {
    char   *key;
    char   *field[N_COLS]; /* the key's display fields */
    samples s[2];
    /* computed */
    double med[2], bound, change_pct, noise_pct, delta;
    const char *verdict;
    int         gated, flagged;
    int         found[2];    /* the findings section: the finding is in run A, B */
    int64_t     at_stake[2]; /* its time at stake there (ns) */
} group;

typedef struct {
    group       *g;
    size_t       n, cap;
    ggprof_index index;
} group_map;


static uint64_t group_hash(const void *ctx, size_t i) { return ggprof_fnv_str(((const group_map *) ctx)->g[i].key); }

static int same_group(const void *ctx, size_t i, const void *key) { return strcmp(((const group_map *) ctx)->g[i].key, key) == 0; }

static group *map_get(group_map *m, const char *key) {
    if (ggprof_index_reserve(&m->index, 0, m->n, group_hash, m) != 0) return NULL;
    uint32_t *slot = ggprof_index_slot(&m->index, ggprof_fnv_str(key), same_group, m, key);
    if (*slot) return &m->g[*slot - 1];
    if (m->n == m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 256;
        group *g = realloc(m->g, cap * sizeof(*g));
        if (!g) return NULL;
        m->g   = g;
        m->cap = cap;
    }
    group *g = &m->g[m->n];
    memset(g, 0, sizeof(*g));
    if (!(g->key = strdup(key))) return NULL;
    *slot = (uint32_t) ++m->n;
    return g;
}

static void map_free(group_map *m) {
    for (size_t i = 0; i < m->n; i++) {
        free(m->g[i].key);
        for (int c = 0; c < N_COLS; c++) free(m->g[i].field[c]);
        free(m->g[i].s[0].v);
        free(m->g[i].s[1].v);
    }
    free(m->g);
    ggprof_index_free(&m->index);
}

/* "[1, 0]" -> "1 0": type ids without the commas that CSV would have to quote. */
static char *compact_ids(const char *json) {
    char *out = strdup(json), *q = out;
    if (!out) return NULL;
    for (const char *p = json; *p; p++) {
        if (*p == '[' || *p == ']') continue;
        if (*p == ',') {
            continue;
        }
        *q++ = *p;
    }
    *q = '\0';
    return out;
}

/* One graph's time for a group: a new sample, or more of the last one when the graph is the same. */
static int push(samples *s, int64_t pid, int64_t graph, double v, double total) {
    s->total += total;
    if (s->n && s->last_pid == pid && s->last_graph == graph) {
        s->v[s->n - 1] += v;
        return 0;
    }
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 16;
        double *w  = realloc(s->v, cap * sizeof(*w));
        if (!w) return -1;
        s->v   = w;
        s->cap = cap;
    }
    s->v[s->n++]  = v;
    s->last_pid   = pid;
    s->last_graph = graph;
    return 0;
}

/* "[[512, 1408, 1, 1], [512, 6, 1, 1]]" -> "512x1408 512x6": trailing dimensions of 1 dropped (shapes are 4 numbers
 * each, schema/trace_db.h). */
static char *compact_shapes(const char *json) {
    char out[256];
    size_t p = 0;
    int64_t ne[GGPROF_MAX_SRC][4];
    int n = ggprof_db_ints(json, &ne[0][0], GGPROF_MAX_SRC * 4) / 4;
    for (int k = 0; k < n && p < sizeof(out) - 64; k++) {
        int nd = 4;
        while (nd > 1 && ne[k][nd - 1] == 1) nd--;
        if (p) out[p++] = ' ';
        for (int i = 0; i < nd; i++) p += (size_t) snprintf(out + p, sizeof(out) - p, "%s%lld", i ? "x" : "", (long long) ne[k][i]);
    }
    out[p] = '\0';
    return strdup(out);
}

/* The row of the query every section reads (see open_run), by column. */
enum { Q_PID, Q_GRAPH, Q_PHASE, Q_TYPE, Q_NAME, Q_SUB_OP, Q_OP, Q_NE_SRC, Q_TYPE_SRC, Q_BACKEND, Q_TENSOR, Q_LAYER, Q_NS,
       N_Q };
/* Which output column shows a query column (-1: none). */
static const int k_q_col[N_Q] = { -1, -1, C_PHASE, -1, -1, -1, C_OP, C_SHAPES, C_TYPES, C_BACKEND, C_TENSOR, C_LAYER, -1 };

/* A section groups the rows by some query columns (an op by its name and sub-op id, as a trace read from JSON
 * has no sub-op names) and shows some. */
typedef struct {
    const char *name;  /* JSON key and CSV section */
    const char *title; /* table heading */
    int         key[10], nkey;
    int         show[8], nshow;
    int         op_only; /* OP records only */
} section_def;

static const section_def k_sections[] = {
    { "phase", "time per token, by phase", { Q_PHASE }, 1, { Q_PHASE }, 1, 0 },
    { "by_op", "by op", { Q_PHASE, Q_TYPE, Q_NAME, Q_SUB_OP, Q_BACKEND }, 5, { Q_PHASE, Q_OP, Q_BACKEND }, 3, 0 },
    { "by_layer", "by layer (OP records)", { Q_PHASE, Q_LAYER }, 2, { Q_PHASE, Q_LAYER }, 2, 1 },
    { "groups", "groups",
      { Q_PHASE, Q_TYPE, Q_NAME, Q_SUB_OP, Q_NE_SRC, Q_TYPE_SRC, Q_BACKEND, Q_TENSOR, Q_LAYER }, 9,
      { Q_PHASE, Q_OP, Q_TENSOR, Q_LAYER, Q_NE_SRC, Q_TYPE_SRC, Q_BACKEND }, 7, 0 },
};
#define N_SECTIONS ((int) (sizeof(k_sections) / sizeof(k_sections[0])))
#define S_PHASE    0

/* The group of a row (q: the row's columns as text, NULL for NULL) in a section, made when new; its index in
 * the section's map, or -1 when out of memory. SYNC time may not trip --fail-above: barrier waits measure the
 * machine's load as much as the code, and what they cost shows in the phases' time per token, which is gated. */
static long group_of(const section_def *d, group_map *m, const char *const *q, int type) {
    char key[2048];
    size_t p = 0;
    for (int k = 0; k < d->nkey; k++) {
        const char *t = q[d->key[k]];
        p += (size_t) snprintf(key + p, sizeof(key) - p, "%s\x1f", t ? t : "\x1e");
        if (p >= sizeof(key)) p = sizeof(key) - 1;
    }
    group *g = map_get(m, key);
    if (!g) return -1;
    for (int k = 0; k < d->nshow; k++) {
        int c         = k_q_col[d->show[k]];
        const char *t = q[d->show[k]];
        if (g->field[c] || !t) continue;
        if (!(g->field[c] = c == C_SHAPES ? compact_shapes(t) : c == C_TYPES ? compact_ids(t) : strdup(t))) return -1;
    }
    g->gated = d->key[0] == Q_PHASE && d->nkey == 1 ? 1 : type != 2;
    return (long) (g - m->g);
}

/* A graph of the diff: its phase, as the first graph_phase row of its (pid, graph_id) says. */
typedef struct {
    int32_t              pid;
    int64_t              graph_id;
    const ggprof_model_graph *g;
} diff_graph;

static int cmp_diff_graph(const void *a, const void *b) {
    const diff_graph *x = a, *y = b;
    if (x->pid != y->pid) return x->pid < y->pid ? -1 : 1;
    if (x->graph_id != y->graph_id) return x->graph_id < y->graph_id ? -1 : 1;
    return (x->g > y->g) - (x->g < y->g); /* the first in graph_phase's order first */
}

/* What the records of one (process, node, type, name, scheduler, backend, layer) in graphs of one phase
 * group into: each section's group (index + 1; 0 for none). Worked out once, then a lookup per record. */
typedef struct {
    int32_t     pid, type, backend_id, layer;
    int64_t     sched_id;
    uint32_t    name, node;
    const char *phase;
    long        group[N_SECTIONS];
} row_sig;

typedef struct {
    row_sig     *v;
    size_t       n, cap;
    ggprof_index index;
} sig_map;

static uint64_t sig_hash(const row_sig *s) {
    uint64_t h = GGPROF_FNV_OFFSET;
    h = ggprof_fnv_step(h, (uint32_t) s->pid);
    h = ggprof_fnv_step(h, s->node);
    h = ggprof_fnv_step(h, (uint32_t) s->type);
    h = ggprof_fnv_step(h, s->name);
    h = ggprof_fnv_step(h, (uint64_t) s->sched_id);
    h = ggprof_fnv_step(h, (uint32_t) s->backend_id);
    h = ggprof_fnv_step(h, (uint32_t) s->layer);
    return ggprof_fnv_step(h, (uint64_t) (uintptr_t) s->phase);
}

static int sig_eq(const row_sig *a, const row_sig *b) {
    return a->pid == b->pid && a->node == b->node && a->type == b->type && a->name == b->name &&
           a->sched_id == b->sched_id && a->backend_id == b->backend_id && a->layer == b->layer && a->phase == b->phase;
}

/* Each section's group of a new signature, from the row's columns as text (an op is its name and sub-op; a
 * record without its node has "[]" shapes and types). */
static int sig_groups(row_sig *s, const ggprof_model *l, group_map *map, int match_any) {
    const ggprof_model_node *n = s->node ? &l->nodes[s->node - 1] : NULL;
    const char *name      = l->names[s->name];
    char type[16], sub_op[24], layer[16], backend[32], op[512];
    const char *q[N_Q]    = { 0 };
    snprintf(type, sizeof(type), "%d", s->type);
    snprintf(sub_op, sizeof(sub_op), "%lld", (long long) (n ? n->sub_op : -1));
    q[Q_PHASE]  = s->phase;
    q[Q_TYPE]   = type;
    q[Q_NAME]   = name;
    q[Q_SUB_OP] = sub_op;
    if (name) {
        const char *so = n && n->sub_op_name && *n->sub_op_name ? n->sub_op_name : NULL;
        if (so) {
            snprintf(op, sizeof(op), "%s(%s)", name, so);
        } else {
            snprintf(op, sizeof(op), "%s", name);
        }
        q[Q_OP] = op;
    }
    q[Q_NE_SRC]   = n && n->ne_src ? n->ne_src : "[]";
    q[Q_TYPE_SRC] = n && n->type_src ? n->type_src : "[]";
    if (match_any) {
        q[Q_BACKEND] = "any";
    } else {
        q[Q_BACKEND] = ggprof_model_backend_label(l, s->pid, s->sched_id, s->backend_id, backend, sizeof(backend));
    }
    q[Q_TENSOR] = n && n->tensor_name && *n->tensor_name ? n->tensor_name : NULL;
    if (s->layer >= 0) {
        snprintf(layer, sizeof(layer), "%d", s->layer);
        q[Q_LAYER] = layer;
    }
    for (int k = 0; k < N_SECTIONS; k++) {
        s->group[k] = 0;
        if (k == S_PHASE || (k_sections[k].op_only && s->type != 0)) continue;
        long g = group_of(&k_sections[k], &map[k], q, s->type);
        if (g < 0) return -1;
        s->group[k] = g + 1;
    }
    return 0;
}

static uint64_t sig_at(const void *ctx, size_t i) { return sig_hash(&((const sig_map *) ctx)->v[i]); }

static int same_sig(const void *ctx, size_t i, const void *key) { return sig_eq(&((const sig_map *) ctx)->v[i], key); }

static const row_sig *sig_get(sig_map *m, const row_sig *key, const ggprof_model *l, group_map *map, int match_any) {
    if (ggprof_index_reserve(&m->index, 0, m->n, sig_at, m) != 0) return NULL;
    uint32_t *slot = ggprof_index_slot(&m->index, sig_hash(key), same_sig, m, key);
    if (*slot) return &m->v[*slot - 1];
    if (m->n == m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 256;
        row_sig *v = realloc(m->v, cap * sizeof(*v));
        if (!v) return NULL;
        m->v   = v;
        m->cap = cap;
    }
    row_sig *s = &m->v[m->n];
    *s         = *key;
    if (sig_groups(s, l, map, match_any) != 0) return NULL;
    *slot = (uint32_t) ++m->n;
    return s;
}

/* What a run is: its trace, its graphs and tokens, its OP, COPY and SYNC time. */
typedef struct {
    const char *path;
    sqlite3    *db;
    int64_t     graphs, tokens;
    double      ns[3]; /* OP, COPY, SYNC */
} run_info;

/* What reading one trace into the sections' maps keeps between its graphs. */
typedef struct {
    group_map *map, *graph_ns;
    int        side, match_any;
    run_info  *r;
    sig_map    sigs;
} diff_pass;

/* ggprof_model_each's consumer: a graph's records into their groups (the phase: the graph's, when listed). */
static int load_records(void *ctx, const ggprof_model *l, const ggprof_model_rec *rec, size_t n, const ggprof_model_graph *g) {
    diff_pass  *d     = ctx;
    const char *phase = g ? g->phase : NULL;
    for (size_t i = 0; i < n; i++) {
        const ggprof_model_rec *e = &rec[i];
        row_sig key          = { e->pid, e->type, e->backend_id, e->layer, e->sched_id, e->name, e->node, phase, { 0 } };
        const row_sig *s     = sig_get(&d->sigs, &key, l, d->map, d->match_any);
        if (!s) return -1;
        double ns = (double) e->duration_ns;
        if (e->type >= 0 && e->type < 3) d->r->ns[e->type] += ns;
        for (int k = 0; k < N_SECTIONS; k++) {
            if (s->group[k] && push(&d->map[k].g[s->group[k] - 1].s[d->side], e->pid, e->graph_id, ns, ns) != 0) return -1;
        }
    }
    return 0;
}

/* The phases from the trace's graphs (a graph's time per token), after its records (load_records): graph_ns gets
 * each phase's graph durations; r gets the run's totals. */
static int load(const ggprof_model *l, group_map *map, group_map *graph_ns, int side, run_info *r) {
    /* The graphs, one per (process, graph id): the first in graph_phase's order. */
    diff_graph *dg = malloc((l->n_graphs ? l->n_graphs : 1) * sizeof(*dg));
    if (!dg) return -1;
    size_t n = 0;
    for (size_t i = 0; i < l->n_graphs; i++) dg[i] = (diff_graph) { l->graphs[i].pid, l->graphs[i].graph_id, &l->graphs[i] };
    ggprof_sort(dg, l->n_graphs, sizeof(*dg), cmp_diff_graph);
    for (size_t i = 0; i < l->n_graphs; i++) {
        if (n && dg[i].graph_id != GGPROF_MODEL_NULL && dg[n - 1].pid == dg[i].pid && dg[n - 1].graph_id == dg[i].graph_id) {
            continue;
        }
        dg[n++] = dg[i];
    }
    int rc    = 0;
    r->graphs = (int64_t) n;
    for (size_t i = 0; i < n && rc == 0; i++) {
        const ggprof_model_graph *g = dg[i].g;
        if (g->has_tokens) r->tokens = ggprof_ns_add(r->tokens, g->n_tokens);
        if (!g->has_tokens || g->n_tokens <= 0) continue;
        const char *q[N_Q] = { 0 };
        q[Q_PHASE]         = g->phase;
        long k = group_of(&k_sections[S_PHASE], &map[S_PHASE], q, 0), kg = group_of(&k_sections[S_PHASE], graph_ns, q, 0);
        double ns = (double) g->duration_ns;
        if (k < 0 || kg < 0 || push(&map[S_PHASE].g[k].s[side], g->pid, g->graph_id, ns / (double) g->n_tokens, ns) ||
            push(&graph_ns->g[kg].s[side], g->pid, g->graph_id, ns, ns)) {
            rc = -1;
        }
    }
    free(dg);
    return rc;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *) a, y = *(const double *) b;
    return x < y ? -1 : x > y;
}

static double median(double *v, size_t n) {
    ggprof_sort(v, n, sizeof(*v), cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Median and median absolute deviation; reorders v. */
static double med_mad(samples *s, double *mad) {
    double med = median(s->v, s->n);
    double *dev = malloc(s->n * sizeof(*dev));
    *mad = 0;
    if (dev) {
        for (size_t i = 0; i < s->n; i++) dev[i] = fabs(s->v[i] - med);
        *mad = median(dev, s->n);
        free(dev);
    }
    return med;
}

/* floor_ns: the least a slowdown beyond noise must add to a graph to trip --fail-above (--min-impact). */
static void judge(group *g, double fail_above, double floor_ns) {
    g->delta = g->s[1].total - g->s[0].total;
    if (!g->s[0].n || !g->s[1].n) {
        g->verdict = g->s[0].n ? "only-a" : "only-b";
        return;
    }
    double mad[2];
    for (int k = 0; k < 2; k++) g->med[k] = med_mad(&g->s[k], &mad[k]);
    double d        = g->med[1] - g->med[0];
    g->change_pct   = g->med[0] > 0 ? 100.0 * d / g->med[0] : NAN;
    if (g->s[0].n < MIN_SAMPLES || g->s[1].n < MIN_SAMPLES) {
        g->verdict   = "few";
        g->bound     = NAN;
        g->noise_pct = NAN;
        return;
    }
    double se = 1.2533 * 1.4826 *
                sqrt(mad[0] * mad[0] / (double) g->s[0].n + mad[1] * mad[1] / (double) g->s[1].n);
    g->bound     = NOISE_Z * se;
    g->noise_pct = g->med[0] > 0 ? 100.0 * g->bound / g->med[0] : NAN;
    g->verdict   = d > g->bound ? "slower" : -d > g->bound ? "faster" : "noise";
    g->flagged   = g->gated && fail_above >= 0 && d > g->bound && g->med[0] > 0 &&
                 100.0 * (d - g->bound) / g->med[0] > fail_above && d - g->bound >= floor_ns;
}

static int cmp_impact(const void *a, const void *b) {
    const group *x = a, *y = b;
    double dx = fabs(x->delta), dy = fabs(y->delta);
    if (dx != dy) return dx < dy ? 1 : -1;
    return strcmp(x->key, y->key);
}

static int cmp_only(const void *a, const void *b) {
    const group *x = a, *y = b;
    double tx = x->s[0].total + x->s[1].total, ty = y->s[0].total + y->s[1].total;
    if (tx != ty) return tx < ty ? 1 : -1;
    return strcmp(x->key, y->key);
}

/* A section of the output: its rows (groups, and for the flagged ones the section they come from). */
typedef struct {
    const char   *name; /* JSON key and CSV section */
    char          title[160];
    int           cols[N_COLS], ncol;
    const group **g;
    const char  **from;
    size_t        n, cap;
} section;

static int sec_add(section *s, const group *g, const char *from) {
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 32;
        const group **gv = realloc(s->g, cap * sizeof(*gv));
        if (!gv) return -1;
        s->g = gv;
        const char **fv = realloc(s->from, cap * sizeof(*fv));
        if (!fv) return -1;
        s->from = fv;
        s->cap  = cap;
    }
    s->g[s->n]      = g;
    s->from[s->n++] = from;
    return 0;
}

static void cell(ggprof_table *t, int c, const group *g, const char *from) {
    int both = g->s[0].n && g->s[1].n;
    if ((g->found[0] || g->found[1]) && c >= C_NA && c <= C_NOISE) { /* a finding has no samples */
        ggprof_table_null(t);
        return;
    }
    switch (c) {
    case C_LAYER:
        if (g->field[c]) {
            ggprof_table_int(t, strtoll(g->field[c], NULL, 10));
        } else {
            ggprof_table_null(t);
        }
        break;
    case C_NA: ggprof_table_int(t, (int64_t) g->s[0].n); break;
    case C_NB: ggprof_table_int(t, (int64_t) g->s[1].n); break;
    case C_AMS: ggprof_table_real(t, g->s[0].total / 1e6); break;
    case C_BMS: ggprof_table_real(t, g->s[1].total / 1e6); break;
    case C_DELTA: ggprof_table_real(t, g->delta / 1e6); break;
    case C_CHANGE: ggprof_table_real(t, both ? g->change_pct : NAN); break;
    case C_NOISE: ggprof_table_real(t, both ? g->noise_pct : NAN); break;
    case C_VERDICT: ggprof_table_text(t, g->verdict); break;
    case C_FROM: ggprof_table_text(t, from); break;
    case C_ASTAKE:
    case C_BSTAKE:
        if (g->found[c == C_BSTAKE]) ggprof_table_real(t, (double) g->at_stake[c == C_BSTAKE] / 1e6);
        else ggprof_table_null(t);
        break;
    default: ggprof_table_text(t, g->field[c]);
    }
}

/* A section as a table of its own columns (the text table, and JSON). */
static int write_section(const section *s, ggprof_format fmt, FILE *f) {
    ggprof_col cols[N_COLS];
    for (int k = 0; k < s->ncol; k++) cols[k] = k_cols[s->cols[k]];
    ggprof_table t;
    ggprof_table_init(&t, cols, (size_t) s->ncol);
    for (size_t r = 0; r < s->n; r++) {
        for (int k = 0; k < s->ncol; k++) cell(&t, s->cols[k], s->g[r], s->from[r]);
    }
    int rc = ggprof_table_write(&t, fmt, f, TABLE_WIDTH);
    ggprof_table_free(&t);
    return rc;
}

/* What a flagged row is: "phase generation", "generation: layer 3", "generation: MUL_MAT on CPU",
 * "generation: MUL_MAT ffn_up-3 [512x1408 512] on CPU". */
static void row_label(char *buf, size_t len, const group *g, const char *from) {
    char *const *f = g->field;
    const char *ph = f[C_PHASE] ? f[C_PHASE] : "-", *on = f[C_BACKEND] ? " on " : "", *be = f[C_BACKEND] ? f[C_BACKEND] : "";
    if (strcmp(from, "phase") == 0) {
        snprintf(buf, len, "phase %s", ph);
    } else if (strcmp(from, "by_layer") == 0) {
        snprintf(buf, len, "%s: layer %s", ph, f[C_LAYER] ? f[C_LAYER] : "-");
    } else if (strcmp(from, "by_op") == 0) {
        snprintf(buf, len, "%s: %s%s%s", ph, f[C_OP] ? f[C_OP] : "-", on, be);
    } else {
        snprintf(buf, len, "%s: %s %s [%s]%s%s", ph, f[C_OP] ? f[C_OP] : "-", f[C_TENSOR] ? f[C_TENSOR] : "-",
                 f[C_SHAPES] ? f[C_SHAPES] : "", on, be);
    }
}

/* ------------------------------------------------------------ the command */


/* Opens a run's trace and reads it into the sections (load). */
static int open_run(run_info *r, const ggprof_window_opts *w, group_map *map, group_map *graph_ns, int side, int match_any) {
    char why[512];
    int rc = ggprof_trace_open_window(r->path, w, &r->db, why, sizeof(why));
    if (rc) return ggprof_fail(rc, "%s", why);
    char what[600];
    snprintf(what, sizeof(what), "diff: reading '%s'", r->path);
    ggprof_model l;
    diff_pass d = { map, graph_ns, side, match_any, r, { 0 } };
    rc = ggprof_model_each(r->db, &l, 0, what, load_records, &d, why, sizeof(why));
    free(d.sigs.v);
    ggprof_index_free(&d.sigs.index);
    if (rc != 0) return ggprof_fail(GGPROF_EXIT_INTERNAL, "'%s': %s", r->path, why);
    rc = load(&l, map, graph_ns, side, r);
    ggprof_model_free(&l);
    return rc ? ggprof_fail(GGPROF_EXIT_INTERNAL, "reading '%s': out of memory", r->path) : 0;
}

static void print_run_line(FILE *f, const char *label, const run_info *r) {
    fprintf(f, "%s  %s: %lld graphs, %lld tokens, OP %.3f ms, SYNC %.3f ms, COPY %.3f ms\n", label, r->path,
            (long long) r->graphs, (long long) r->tokens, r->ns[0] / 1e6, r->ns[2] / 1e6, r->ns[1] / 1e6);
}

static void print_run_json(FILE *f, const char *key, const run_info *r) {
    fprintf(f, "\"%s\": {\"trace\": ", key);
    ggprof_json_put(f, r->path, 0);
    fprintf(f, ", \"graphs\": %lld, \"tokens\": %lld, \"op_ms\": %.3f, \"sync_ms\": %.3f, \"copy_ms\": %.3f},\n",
            (long long) r->graphs, (long long) r->tokens, r->ns[0] / 1e6, r->ns[2] / 1e6, r->ns[1] / 1e6);
}

static int cmp_impact_p(const void *a, const void *b) { return cmp_impact(*(const group *const *) a, *(const group *const *) b); }
static int cmp_only_p(const void *a, const void *b) { return cmp_only(*(const group *const *) a, *(const group *const *) b); }

/* What the options asked for. */
typedef struct {
    const char *path[2], *format, *match;
    double      fail_above, min_impact;
    long        top;
    ggprof_format fmt;
    ggprof_window_opts window; /* the same window of both traces */
} diff_opts;

/* What a diff builds: both runs, their groups per section, and the sections printed (each rollup and the aligned
 * groups, then the groups of one run only, then the flagged). */
typedef struct {
    run_info   run[2];
    group_map  map[N_SECTIONS], graph_ns, findings;
    section    out[N_SECTIONS + 4];
    int        n_out, n_flagged;
    section   *flagged, *only[2], *found;
    size_t     n_aligned, n_only[2];
    double     only_ns[2];
    const group **order;
} diff_run;

static int diff_parse(diff_opts *o, int argc, char **argv) {
    const ggprof_opt opts[] = {
        { "--fail-above", NULL, GGPROF_OPT_PERCENT, &o->fail_above, NULL, "PCT",
          "exit 1 when a phase, op, layer or group slowed by more than PCT% beyond the noise bound (change - bound "
          "> PCT), and say which on stderr: a gate for CI; SYNC time (barrier waits) is shown but not gated: it "
          "measures the machine's load" },
        { "--min-impact", NULL, GGPROF_OPT_PERCENT, &o->min_impact, NULL, "PCT",
          "with --fail-above: gate only slowdowns that add at least PCT% (default 1) to the median graph time of "
          "their phase in A (a 2 us op 20% slower is not a regression)" },
        { "--match-backend", NULL, GGPROF_OPT_STRING, &o->match, NULL, "name|any",
          "any: align ignoring the backend (one model run on two backends); default: name" },
        { "-n", NULL, GGPROF_OPT_COUNT, &o->top, NULL, "N", "groups shown (default 20; 0: all)" },
        { "--format", NULL, GGPROF_OPT_STRING, &o->format, NULL, "table|csv|json",
          "table (default), csv (one header, a 'section' column) or json (one object)" },
    };
    ggprof_args a = { opts, (int) (sizeof(opts) / sizeof(opts[0])), o->path, 2, 0, "two traces only ('%s' is a third)", 0, 0, &o->window };
    int rc = ggprof_parse_args(argc, argv, &a);
    if (rc) return rc;
    if (a.n_pos < 2) return ggprof_fail(GGPROF_EXIT_USAGE, "needs two traces; usage: ggprof diff A B [--fail-above PCT]");
    if (strcmp(o->match, "name") != 0 && strcmp(o->match, "any") != 0) {
        return ggprof_fail(GGPROF_EXIT_USAGE, "--match-backend '%s': expected name or any", o->match);
    }
    if (ggprof_format_parse(o->format, &o->fmt) != 0) {
        return ggprof_fail(GGPROF_EXIT_USAGE, "unknown format '%s'; expected table, csv or json", o->format);
    }
    return 0;
}

static int diff_load(diff_run *d, const diff_opts *o) {
    for (int k = 0; k < 2; k++) {
        d->run[k].path = o->path[k];
        int rc = open_run(&d->run[k], &o->window, d->map, &d->graph_ns, k, strcmp(o->match, "any") == 0);
        if (rc) return rc;
    }
    return 0;
}

/* The sections and their columns: a section shows its columns in the order of k_cols, then the statistics. */
static void diff_sections(diff_run *d) {
    static const int stat_cols[] = { C_NA, C_NB, C_AMS, C_BMS, C_DELTA, C_CHANGE, C_NOISE, C_VERDICT };
    int shown[N_SECTIONS][N_COLS] = { { 0 } };
    for (int s = 0; s < N_SECTIONS; s++) {
        for (int k = 0; k < k_sections[s].nshow; k++) shown[s][k_q_col[k_sections[s].show[k]]] = 1;
    }
    for (int s = 0; s < N_SECTIONS; s++) {
        section *o = &d->out[d->n_out++];
        o->name    = k_sections[s].name;
        snprintf(o->title, sizeof(o->title), "%s", k_sections[s].title);
        for (int c = 0; c < N_COLS; c++) {
            if (shown[s][c]) o->cols[o->ncol++] = c;
        }
        for (size_t k = 0; k < sizeof(stat_cols) / sizeof(stat_cols[0]); k++) o->cols[o->ncol++] = stat_cols[k];
    }
    for (int k = 0; k < 2; k++) {
        section *only = d->only[k] = &d->out[d->n_out++];
        only->name = k ? "only_b" : "only_a";
        for (int c = 0; c < N_COLS; c++) {
            if (shown[N_SECTIONS - 1][c]) only->cols[only->ncol++] = c;
        }
        only->cols[only->ncol++] = k ? C_NB : C_NA;
        only->cols[only->ncol++] = k ? C_BMS : C_AMS;
    }
    static const int found_cols[] = { C_RULE, C_OP, C_LAYER, C_BACKEND, C_ASTAKE, C_BSTAKE, C_VERDICT };
    d->found       = &d->out[d->n_out++];
    d->found->name = "findings";
    memcpy(d->found->cols, found_cols, sizeof(found_cols));
    d->found->ncol = (int) (sizeof(found_cols) / sizeof(found_cols[0]));
    static const int fcols[] = { C_FROM, C_PHASE, C_OP, C_TENSOR, C_LAYER, C_SHAPES, C_BACKEND, C_NA, C_NB,
                                 C_CHANGE, C_NOISE };
    d->flagged       = &d->out[d->n_out++];
    d->flagged->name = "flagged";
    memcpy(d->flagged->cols, fcols, sizeof(fcols));
    d->flagged->ncol = (int) (sizeof(fcols) / sizeof(fcols[0]));
}

/* The groups of one run only, largest first, into only[0] and only[1] (order: the section's groups). */
static int diff_only(diff_run *d, const diff_opts *o, size_t n) {
    ggprof_sort(d->order, n, sizeof(*d->order), cmp_only_p);
    for (int k = 0; k < 2; k++) {
        size_t listed = 0;
        for (size_t i = 0; i < n; i++) {
            const group *g = d->order[i];
            if (g->s[k].n && !g->s[!k].n && (o->top == 0 || listed < (size_t) o->top)) {
                if (sec_add(d->only[k], g, NULL)) return -1;
                listed++;
            }
        }
        snprintf(d->only[k]->title, sizeof(d->only[k]->title), "only in %s: %zu groups, %.3f ms%s", k ? "B" : "A",
                 d->n_only[k], d->only_ns[k] / 1e6, listed < d->n_only[k] ? " (the largest listed)" : "");
    }
    return 0;
}

/* Section s: each group judged against its noise (and the phase's impact floor), ranked by its change, the
 * flagged ones also into the flagged section. */
static int diff_rank(diff_run *d, const diff_opts *o, int s) {
    group_map *m = &d->map[s];
    for (size_t i = 0; i < m->n; i++) {
        double floor_ns = 0;
        if (s != S_PHASE) {
            char key[256];
            snprintf(key, sizeof(key), "%s\x1f", m->g[i].field[C_PHASE] ? m->g[i].field[C_PHASE] : "\x1e");
            group *ph = map_get(&d->graph_ns, key);
            double mad;
            if (ph && ph->s[0].n) floor_ns = o->min_impact / 100.0 * med_mad(&ph->s[0], &mad);
        }
        judge(&m->g[i], o->fail_above, floor_ns);
    }
    free(d->order);
    if (!(d->order = malloc((m->n ? m->n : 1) * sizeof(*d->order)))) return -1;
    for (size_t i = 0; i < m->n; i++) d->order[i] = &m->g[i];
    ggprof_sort(d->order, m->n, sizeof(*d->order), cmp_impact_p);
    int is_groups = s == N_SECTIONS - 1;
    size_t shown_n = 0;
    for (size_t i = 0; i < m->n; i++) {
        const group *g = d->order[i];
        if (is_groups && (!g->s[0].n || !g->s[1].n)) {
            d->n_only[g->s[1].n ? 1 : 0]++;
            d->only_ns[g->s[1].n ? 1 : 0] += g->s[0].total + g->s[1].total;
            continue;
        }
        if (is_groups) d->n_aligned++;
        if (!is_groups || o->top == 0 || shown_n < (size_t) o->top) {
            if (sec_add(&d->out[s], g, NULL)) return -1;
            shown_n++;
        }
        if (g->flagged) {
            d->n_flagged++;
            if (sec_add(d->flagged, g, k_sections[s].name)) return -1;
        }
    }
    if (!is_groups) return 0;
    snprintf(d->out[s].title, sizeof(d->out[s].title), "groups aligned: %zu; the %zu largest changes", d->n_aligned,
             shown_n);
    return diff_only(d, o, m->n);
}

/* The findings of both runs (report's, findings.c, without roofs: below_roof stays silent), one group per rule and
 * the op, layer and backend its evidence names: appeared (in B only), gone (in A only) or both; the largest time at
 * stake first. */
static int cmp_stake_p(const void *a, const void *b) {
    const group *x = *(const group *const *) a, *y = *(const group *const *) b;
    int64_t sx = x->at_stake[0] > x->at_stake[1] ? x->at_stake[0] : x->at_stake[1];
    int64_t sy = y->at_stake[0] > y->at_stake[1] ? y->at_stake[0] : y->at_stake[1];
    if (sx != sy) return sx < sy ? 1 : -1;
    return strcmp(x->key, y->key);
}

static int diff_findings(diff_run *d) {
    static const int ev_col[] = { C_OP, C_LAYER, C_BACKEND };
    static const char *const ev_key[] = { "op", "layer", "backend" };
    for (int k = 0; k < 2; k++) {
        ggprof_findings f;
        char why[256];
        if (ggprof_findings_run(d->run[k].db, NULL, NULL, &f, why, sizeof(why)) != 0) {
            return ggprof_fail(GGPROF_EXIT_INTERNAL, "'%s': %s", d->run[k].path, why);
        }
        int rc = 0;
        for (size_t i = 0; i < f.n && !rc; i++) {
            const ggprof_finding *x = &f.v[i];
            char key[512];
            size_t p = (size_t) snprintf(key, sizeof(key), "%s", x->rule);
            for (size_t e = 0; e < 3 && p < sizeof(key); e++) {
                const char *v = ggprof_finding_ev(x, ev_key[e]);
                p += (size_t) snprintf(key + p, sizeof(key) - p, "\x1f%s", v ? v : "\x1e");
            }
            group *g = map_get(&d->findings, key);
            if (!g || (!g->field[C_RULE] && !(g->field[C_RULE] = strdup(x->rule)))) rc = -1;
            for (size_t e = 0; e < 3 && !rc; e++) {
                const char *v = ggprof_finding_ev(x, ev_key[e]);
                if (v && !g->field[ev_col[e]] && !(g->field[ev_col[e]] = strdup(v))) rc = -1;
            }
            if (!rc) g->found[k] = 1, g->at_stake[k] = x->at_stake_ns;
        }
        ggprof_findings_free(&f);
        if (rc) return ggprof_fail(GGPROF_EXIT_INTERNAL, "out of memory");
    }
    group_map *m = &d->findings;
    size_t n[3] = { 0 }; /* appeared, gone, both */
    free(d->order);
    if (!(d->order = malloc((m->n ? m->n : 1) * sizeof(*d->order)))) return ggprof_fail(GGPROF_EXIT_INTERNAL, "out of memory");
    for (size_t i = 0; i < m->n; i++) {
        group *g   = &m->g[i];
        int    w   = g->found[0] && g->found[1] ? 2 : g->found[1] ? 0 : 1;
        g->verdict = w == 2 ? "both" : w == 0 ? "appeared" : "gone";
        n[w]++;
        d->order[i] = g;
    }
    ggprof_sort(d->order, m->n, sizeof(*d->order), cmp_stake_p);
    for (size_t i = 0; i < m->n; i++) {
        if (sec_add(d->found, d->order[i], NULL)) return ggprof_fail(GGPROF_EXIT_INTERNAL, "out of memory");
    }
    snprintf(d->found->title, sizeof(d->found->title), "findings (ggprof report's, docs/findings.md): %zu appeared in B, "
             "%zu gone, %zu in both", n[0], n[1], n[2]);
    return 0;
}

/* Memory A and B held at their peaks, per backend (buffer type) and kind, summed over processes; and their compute
 * buffers' peaks, paired by backend in order (ggprof memory's numbers, memory.c). Nothing for traces without memory. */
static int64_t mem_at(const ggprof_mem *m, const char *backend, int kind) {
    int64_t v = 0;
    for (size_t i = 0; i < m->n_backends; i++) {
        if (strcmp(m->backends[i].name, backend) == 0) v += m->backends[i].at_peak[kind];
    }
    return v;
}

static const ggprof_mpeak *mem_peak(const ggprof_mem *m, const char *backend, int nth) {
    for (size_t i = 0; i < m->n_peaks; i++) {
        if (strcmp(m->peaks[i].buf->name, backend) == 0 && nth-- == 0) return &m->peaks[i];
    }
    return NULL;
}

static void diff_memory(FILE *f, const diff_run *d, ggprof_format fmt) {
    ggprof_mem m[2];
    char       why[256];
    int        ok = ggprof_mem_load(d->run[0].db, &m[0], why, sizeof(why)) == 0;
    if (ok && ggprof_mem_load(d->run[1].db, &m[1], why, sizeof(why)) != 0) {
        ggprof_mem_free(&m[0]);
        ok = 0;
    }
    if (!ok) return;
    if (m[0].present || m[1].present) {
        int first = 1;
        if (fmt == GGPROF_FMT_TABLE) {
            fprintf(f, "\nmemory at each run's peak, MiB (ggprof memory)\n  %-24s %-8s %10s %10s %10s\n", "backend",
                    "kind", "A", "B", "change");
        } else {
            fputs(",\n\"memory\": [", f);
        }
        for (int k = 0; k < 2; k++) {
            for (size_t i = 0; i < m[k].n_backends; i++) {
                const char *name = m[k].backends[i].name;
                int seen = 0; /* each backend once: from A, or from B when A has none */
                for (size_t j = 0; j < i && !seen; j++) seen = strcmp(m[k].backends[j].name, name) == 0;
                for (size_t j = 0; k == 1 && j < m[0].n_backends && !seen; j++) seen = strcmp(m[0].backends[j].name, name) == 0;
                if (seen) continue;
                for (int kind = 0; kind < GGPROF_MEM_KINDS; kind++) {
                    int64_t a = mem_at(&m[0], name, kind), b = mem_at(&m[1], name, kind);
                    if (!a && !b) continue;
                    char esc[160];
                    if (fmt == GGPROF_FMT_TABLE) {
                        fprintf(f, "  %-24s %-8s %10.2f %10.2f %+10.2f\n", ggprof_text_safe(name, esc, sizeof(esc)),
                                ggprof_mem_kind_names[kind], GGPROF_MIB(a), GGPROF_MIB(b), GGPROF_MIB(b - a));
                        continue;
                    }
                    fprintf(f, "%s\n{\"backend\": ", first ? "" : ",");
                    ggprof_json_put(f, name, 0);
                    fprintf(f, ", \"kind\": \"%s\", \"a_bytes\": %" PRId64 ", \"b_bytes\": %" PRId64 "}",
                            ggprof_mem_kind_names[kind], a, b);
                    first = 0;
                }
                for (int nth = 0;; nth++) {
                    const ggprof_mpeak *pa = mem_peak(&m[0], name, nth), *pb = mem_peak(&m[1], name, nth);
                    if (!pa && !pb) break;
                    if (fmt != GGPROF_FMT_TABLE) continue;
                    char e[5][160];
                    fprintf(f, "  %s compute peak: A %s%.2f MiB at %s %s, B %.2f MiB at %s %s\n",
                            ggprof_text_safe(name, e[0], sizeof(e[0])), "", pa ? GGPROF_MIB(pa->extent) : 0.0,
                            pa ? ggprof_text_safe(pa->step_op, e[1], sizeof(e[1])) : "-",
                            pa ? ggprof_text_safe(pa->step_tensor, e[2], sizeof(e[2])) : "",
                            pb ? GGPROF_MIB(pb->extent) : 0.0, pb ? ggprof_text_safe(pb->step_op, e[3], sizeof(e[3])) : "-",
                            pb ? ggprof_text_safe(pb->step_tensor, e[4], sizeof(e[4])) : "");
                }
            }
        }
        if (fmt != GGPROF_FMT_TABLE) fputs("]", f);
    }
    ggprof_mem_free(&m[0]);
    ggprof_mem_free(&m[1]);
}

static int diff_print(const diff_run *d, const diff_opts *o) {
    FILE *f = stdout;
    int n_show = o->fail_above >= 0 ? d->n_out : d->n_out - 1; /* the flagged section is the last */
    int werr   = 0;
    if (o->fmt == GGPROF_FMT_TABLE) {
        print_run_line(f, "A", &d->run[0]);
        print_run_line(f, "B", &d->run[1]);
        for (int s = 0; s < n_show; s++) {
            fprintf(f, "\n%s\n", d->out[s].title);
            if (d->out[s].n) werr |= write_section(&d->out[s], o->fmt, f);
        }
        diff_memory(f, d, o->fmt);
    } else if (o->fmt == GGPROF_FMT_CSV) {
        /* One CSV: the rows of every section under one header, a "section" column first. */
        ggprof_col cols[N_COLS + 1] = { k_section_col };
        for (int c = 0; c < N_COLS; c++) cols[c + 1] = k_cols[c];
        ggprof_table t;
        ggprof_table_init(&t, cols, N_COLS + 1);
        for (int s = 0; s < n_show; s++) {
            for (size_t r = 0; r < d->out[s].n; r++) {
                ggprof_table_text(&t, d->out[s].name);
                for (int c = 0; c < N_COLS; c++) cell(&t, c, d->out[s].g[r], d->out[s].from[r]);
            }
        }
        werr |= ggprof_table_write(&t, o->fmt, f, TABLE_WIDTH);
        ggprof_table_free(&t);
    } else {
        fputs("{\n", f);
        print_run_json(f, "a", &d->run[0]);
        print_run_json(f, "b", &d->run[1]);
        for (int s = 0; s < n_show; s++) {
            fprintf(f, "\"%s\": ", d->out[s].name);
            werr |= write_section(&d->out[s], o->fmt, f);
            if (s + 1 < n_show) fputs(",\n", f);
        }
        diff_memory(f, d, o->fmt);
        fputs("}\n", f);
    }
    if (werr || fflush(f) != 0 || ferror(f)) return ggprof_fail(GGPROF_EXIT_INTERNAL, "cannot write the output");
    return 0;
}

/* --fail-above: exit 1 naming the first five groups that slowed beyond it. */
static int diff_gate(const diff_run *d, const diff_opts *o) {
    if (!d->n_flagged) return 0;
    char list[1024];
    size_t p = 0;
    for (size_t r = 0; r < d->flagged->n && r < 5 && p < sizeof(list); r++) {
        char what[256];
        const group *g = d->flagged->g[r];
        row_label(what, sizeof(what), g, d->flagged->from[r]);
        p += (size_t) snprintf(list + p, sizeof(list) - p, "%s%s (+%.1f%%, noise %.1f%%)", r ? "; " : "", what,
                               g->change_pct, g->noise_pct);
    }
    return ggprof_fail(GGPROF_EXIT_INTERNAL, "%d slowed by more than %g%% beyond noise: %s%s", d->n_flagged,
                       o->fail_above, list, d->n_flagged > 5 ? "; ..." : "");
}

static void diff_free(diff_run *d) {
    free(d->order);
    for (int s = 0; s < d->n_out; s++) {
        free(d->out[s].g);
        free(d->out[s].from);
    }
    for (int s = 0; s < N_SECTIONS; s++) map_free(&d->map[s]);
    map_free(&d->graph_ns);
    map_free(&d->findings);
    for (int k = 0; k < 2; k++) sqlite3_close(d->run[k].db);
}

int ggprof_cmd_diff(int argc, char **argv) {
    diff_opts o = { { NULL, NULL }, "table", "name", -1, 1, 20, GGPROF_FMT_TABLE, { 0 } };
    int rc = diff_parse(&o, argc, argv);
    if (rc) return rc;
    diff_run *d = calloc(1, sizeof(*d));
    if (!d) return ggprof_fail(GGPROF_EXIT_INTERNAL, "out of memory");
    rc = diff_load(d, &o);
    if (!rc) {
        diff_sections(d);
        for (int s = 0; s < N_SECTIONS && !rc; s++) {
            if (diff_rank(d, &o, s) != 0) rc = ggprof_fail(GGPROF_EXIT_INTERNAL, "out of memory");
        }
        snprintf(d->flagged->title, sizeof(d->flagged->title), "slowed by more than %g%% beyond noise: %d",
                 o.fail_above, d->n_flagged);
        if (!rc) rc = diff_findings(d);
    }
    if (!rc) rc = diff_print(d, &o);
    if (!rc) rc = diff_gate(d, &o);
    diff_free(d);
    free(d);
    return rc;
}
