/* The upstream profiler's C API (engine/include/ggml-profiler.h), kept per scheduler inside the process. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "schedulers.h"
#include "internal.h"
#include "ggml-profiler.h"
#include "summary.h"
#include "v3_format.h"

struct ggprof_api_sched {
    pthread_mutex_t      lock;
    bool                 enabled;
    ggml_backend_sched_t sched;
    ggml_profile_record *v;
    size_t               n, cap;
};

/* Names handed out in records live as long as the process: interned once. */
static pthread_mutex_t g_intern_lock = PTHREAD_MUTEX_INITIALIZER;
static char          **g_strings;
static size_t          g_n_strings, g_cap_strings;

static const char *intern(const char *s) {
    if (!s || !*s) return NULL;
    pthread_mutex_lock(&g_intern_lock);
    for (size_t i = 0; i < g_n_strings; i++) {
        if (strcmp(g_strings[i], s) == 0) {
            pthread_mutex_unlock(&g_intern_lock);
            return g_strings[i];
        }
    }
    if (g_n_strings == g_cap_strings) {
        size_t cap = g_cap_strings ? g_cap_strings * 2 : 64;
        char **v = realloc(g_strings, cap * sizeof(*v));
        if (!v) {
            pthread_mutex_unlock(&g_intern_lock);
            return NULL;
        }
        g_strings     = v;
        g_cap_strings = cap;
    }
    char *copy = strdup(s);
    if (copy) g_strings[g_n_strings++] = copy;
    pthread_mutex_unlock(&g_intern_lock);
    return copy;
}

static ggml_profile_record *add(ggprof_api_sched *a) {
    if (a->n == a->cap) {
        size_t cap = a->cap ? a->cap * 2 : 4096;
        ggml_profile_record *v = realloc(a->v, cap * sizeof(*v));
        if (!v) return NULL;
        a->v   = v;
        a->cap = cap;
    }
    ggml_profile_record *r = &a->v[a->n++];
    memset(r, 0, sizeof(*r));
    return r;
}

/* The fields a description carries, as the upstream profiler's ggml_profile_record_from_tensor fills them. */
static void from_desc(ggml_profile_record *r, const ggprof_msg_node *d) {
    r->out_type = -1;
    r->sub_op   = -1;
    for (int i = 0; i < GGML_MAX_SRC; i++) r->type_src[i] = -1;
    if (!d) return;
    snprintf(r->tensor_name, sizeof(r->tensor_name), "%s", d->tensor_name);
    memcpy(r->ne, d->ne, sizeof(r->ne));
    r->out_type = d->out_type;
    r->n_src    = d->n_src;
    memcpy(r->ne_src, d->ne_src, sizeof(r->ne_src));
    memcpy(r->nb_src, d->nb_src, sizeof(r->nb_src));
    for (int i = 0; i < GGML_MAX_SRC; i++) r->type_src[i] = d->type_src[i];
    memcpy(r->op_params, d->op_params, sizeof(r->op_params));
    r->sub_op = d->sub_op;
}

struct chunk_ctx {
    ggprof_api_sched         *a;
    const ggprof_msg_cpu_ops *m;
};

static void add_interval(const ggprof_cpu_interval *iv, void *user) {
    struct chunk_ctx *c = user;
    if (iv->type != GGPROF_REC_OP) return; /* the upstream profiler has no SYNC records: its op times include the wait */
    const ggprof_msg_node *d = ggprof_node_desc(iv->node_id);
    ggml_profile_record *r   = add(c->a);
    if (!r) return;
    from_desc(r, d);
    r->type       = GGML_PROFILE_EVENT_OP;
    r->name       = intern(d ? d->op : "unknown");
    r->backend_id = c->m->backend_id;
    r->split_id   = c->m->split_id;
    r->start_ns   = iv->start_ns;
    r->end_ns     = iv->start_ns + iv->duration_ns;
    r->bytes      = d ? d->nbytes : 0;
    if (iv->fused_node_id) {
        const ggprof_msg_node *f = ggprof_node_desc(iv->fused_node_id);
        char pair[80];
        snprintf(pair, sizeof(pair), "%s+%s", d ? d->op : "?", f ? f->op : "?");
        r->extra = intern(pair);
    }
}

void ggprof_api_cpu_chunk(const ggprof_msg_cpu_ops *m, const ggprof_cpu_op_id *ids, void *user) {
    ggprof_api_sched *a = user;
    pthread_mutex_lock(&a->lock);
    if (a->enabled) {
        struct chunk_ctx c = { a, m };
        ggprof_cpu_ops_expand(m, ids, add_interval, &c);
    }
    pthread_mutex_unlock(&a->lock);
}

void ggprof_api_event(ggprof_api_sched *a, const ggprof_msg_event *e) {
    if (e->type != GGPROF_REC_OP && e->type != GGPROF_REC_COPY) return;
    pthread_mutex_lock(&a->lock);
    ggml_profile_record *r = a->enabled ? add(a) : NULL;
    if (r) {
        const ggprof_msg_node *d = ggprof_node_desc(e->node_id);
        from_desc(r, d);
        bool copy     = e->type == GGPROF_REC_COPY;
        r->type       = copy ? GGML_PROFILE_EVENT_COPY : GGML_PROFILE_EVENT_OP;
        r->name       = copy ? ggprof_copy_names[e->sub & 3] : intern(d ? d->op : "unknown");
        r->backend_id = e->backend_id;
        r->split_id   = e->split_id;
        r->start_ns   = e->start_ns;
        r->end_ns     = e->start_ns + e->duration_ns;
        r->bytes      = e->bytes;
        r->extra      = copy ? intern(d ? d->tensor_name : NULL) : NULL;
    }
    pthread_mutex_unlock(&a->lock);
}

bool ggprof_api_enabled(const ggprof_api_sched *a) { return a && a->enabled; }

void ggprof_api_free(ggprof_api_sched *a) {
    if (!a) return;
    free(a->v);
    pthread_mutex_destroy(&a->lock);
    free(a);
}

/* ---- the upstream profiler's functions ---- */

static ggprof_api_sched *api_for(ggml_backend_sched_t sched, bool create) {
    ggprof_api_sched **slot = ggprof_sched_api_slot(sched);
    if (!slot) return NULL;
    if (!*slot && create) {
        ggprof_api_sched *a = calloc(1, sizeof(*a));
        if (!a) return NULL;
        pthread_mutex_init(&a->lock, NULL);
        a->sched = sched;
        *slot    = a;
    }
    return *slot;
}

/* The upstream profiler's C API: turns the engine on without a sink (records stay in the process) and keeps node descriptions by
 * id. Returns false when ggml is missing or not the ggml this engine understands. */
static bool ggprof_api_activate(const void *real_fn_in_ggml_base) {
    ggprof_engine_set_ggml(real_fn_in_ggml_base);
    ggprof_engine_setup();
    if (!ggprof_eng.g.ok) return false;
    ggprof_desc_keep();
    if (!ggprof_sink_attached()) ggprof_eng.level = GGPROF_LEVEL_OP;
    ggprof_eng.enabled = true;
    return true;
}

GGPROF_API void ggml_backend_sched_set_profiling(ggml_backend_sched_t sched, bool enable) {
    if (!sched || !ggprof_api_activate(ggprof_resolve_real("ggml_backend_sched_get_n_backends", NULL, NULL))) return;
    ggprof_api_sched *a = api_for(sched, true);
    if (!a) return;
    pthread_mutex_lock(&a->lock);
    a->enabled = enable;
    if (!enable) a->n = 0;
    pthread_mutex_unlock(&a->lock);
}

GGPROF_API bool ggml_backend_sched_get_profiling(ggml_backend_sched_t sched) {
    return ggprof_api_enabled(sched && ggprof_eng.g.ok ? api_for(sched, false) : NULL);
}

GGPROF_API int ggml_backend_sched_get_profiling_records(ggml_backend_sched_t sched, const ggml_profile_record **records) {
    ggprof_api_sched *a = sched && ggprof_eng.g.ok ? api_for(sched, false) : NULL;
    if (records) *records = a ? a->v : NULL;
    return a ? (int) a->n : 0;
}

GGPROF_API void ggml_backend_sched_reset_profiling(ggml_backend_sched_t sched) {
    ggprof_api_sched *a = sched && ggprof_eng.g.ok ? api_for(sched, false) : NULL;
    if (!a) return;
    pthread_mutex_lock(&a->lock);
    a->n = 0;
    pthread_mutex_unlock(&a->lock);
}

GGPROF_API uint64_t ggml_profiler_time_ns(void) { return ggprof_now_ns(); }

static const char *backend_name(ggml_backend_sched_t sched, int id) {
    const ggprof_ggml *g = &ggprof_eng.g;
    if (id < 0 || id >= g->fn_ggml_backend_sched_get_n_backends(sched)) return "unknown";
    return g->fn_ggml_backend_name(g->fn_ggml_backend_sched_get_backend(sched, id));
}

static void stats_of(ggml_backend_sched_t sched, const ggprof_api_sched *a, ggprof_op_stats *s) {
    memset(s, 0, sizeof(*s));
    for (size_t i = 0; a && i < a->n; i++) {
        const ggml_profile_record *r = &a->v[i];
        int is_new;
        ggprof_op_stat *st = ggprof_op_stats_add(s, r->type, r->backend_id, r->name ? r->name : "unknown",
                                                 r->end_ns > r->start_ns ? r->end_ns - r->start_ns : 0, r->bytes,
                                                 &is_new);
        if (st) {
            for (int k = 0; k < 3; k++) memcpy(st->rep_ne_src[k], r->ne_src[k], sizeof(st->rep_ne_src[k]));
            snprintf(st->backend, sizeof(st->backend), "%s", backend_name(sched, r->backend_id));
        }
    }
    ggprof_op_stats_sort(s);
}

GGPROF_API void ggml_backend_sched_print_profiling(ggml_backend_sched_t sched) {
    ggprof_api_sched *a = sched && ggprof_eng.g.ok ? api_for(sched, false) : NULL;
    if (!a || a->n == 0) {
        fprintf(stderr, "[profiler] No profiling data available\n");
        return;
    }
    ggprof_op_stats s;
    pthread_mutex_lock(&a->lock);
    stats_of(sched, a, &s);
    pthread_mutex_unlock(&a->lock);
    ggprof_print_summary(stderr, &s);
    ggprof_op_stats_free(&s);
}

GGPROF_API int ggml_backend_sched_write_profiling_text(ggml_backend_sched_t sched, FILE *fp) {
    if (!fp) return -1;
    ggprof_api_sched *a = sched && ggprof_eng.g.ok ? api_for(sched, false) : NULL;
    ggprof_op_stats s;
    if (a) pthread_mutex_lock(&a->lock);
    stats_of(sched, a, &s);
    if (a) pthread_mutex_unlock(&a->lock);
    ggprof_write_text_report(fp, &s);
    ggprof_op_stats_free(&s);
    return ferror(fp) ? -1 : 0;
}

GGPROF_API int ggml_backend_sched_write_profiling_json(ggml_backend_sched_t sched, FILE *fp) {
    if (!fp || !sched || !ggprof_eng.g.ok) return -1;
    const ggprof_ggml *g = &ggprof_eng.g;
    ggprof_api_sched *a  = api_for(sched, false);
    if (a) pthread_mutex_lock(&a->lock);
    uint64_t total = 0;
    size_t   n     = a ? a->n : 0;
    for (size_t i = 0; i < n; i++) total += a->v[i].end_ns > a->v[i].start_ns ? a->v[i].end_ns - a->v[i].start_ns : 0;
    fprintf(fp, "{\n  \"version\": 3,\n  \"profiler\": \"ggml\",\n  \"total_records\": %zu,\n  \"total_ns\": %llu,\n",
            n, (unsigned long long) total);
    fprintf(fp, "  \"backends\": [\n");
    int nb = g->fn_ggml_backend_sched_get_n_backends(sched);
    for (int b = 0; b < nb; b++) {
        ggml_backend_t     be = g->fn_ggml_backend_sched_get_backend(sched, b);
        ggml_backend_dev_t d  = g->fn_ggml_backend_get_device(be);
        char name[160], dev[160];
        ggprof_json_string(name, sizeof(name), g->fn_ggml_backend_name(be));
        ggprof_json_string(dev, sizeof(dev), d ? g->fn_ggml_backend_dev_name(d) : "unknown");
        fprintf(fp, "    {\"id\": %d, \"name\": %s, \"device\": %s, \"device_type\": %d}%s\n", b, name, dev,
                d ? g->fn_ggml_backend_dev_type(d) : 0, b + 1 < nb ? "," : "");
    }
    fprintf(fp, "  ],\n  \"records\": [\n");
    for (size_t i = 0; i < n; i++) {
        const ggml_profile_record *r = &a->v[i];
        char ne[128], ne_src[1024], nb_src[1024], type_src[256], op_params[512], line[8192];
        int  ns = r->n_src < 0 ? 0 : r->n_src > GGML_MAX_SRC ? GGML_MAX_SRC : r->n_src;
        int32_t ts[GGML_MAX_SRC];
        for (int k = 0; k < ns; k++) ts[k] = r->type_src[k];
        ggprof_json_i64s(ne, sizeof(ne), r->ne, 4);
        ggprof_json_shapes(ne_src, sizeof(ne_src), (const int64_t (*)[4]) r->ne_src, ns);
        ggprof_json_shapes(nb_src, sizeof(nb_src), (const int64_t (*)[4]) r->nb_src, ns);
        ggprof_json_i32s(type_src, sizeof(type_src), ts, ns);
        ggprof_json_i32s(op_params, sizeof(op_params), r->op_params, GGML_MAX_OP_PARAMS / 4);
        ggprof_v3_fields f = { (int) r->type, r->name, r->backend_id, r->split_id, r->start_ns,
                               r->end_ns > r->start_ns ? r->end_ns - r->start_ns : 0, r->bytes, r->extra,
                               r->tensor_name[0] ? r->tensor_name : NULL, ne, r->out_type, r->n_src, ne_src, nb_src,
                               type_src, op_params, r->sub_op };
        ggprof_v3_record_open(line, sizeof(line), &f);
        fprintf(fp, "    %s}%s\n", line, i + 1 < n ? "," : "");
    }
    fprintf(fp, "  ]\n}\n");
    if (a) pthread_mutex_unlock(&a->lock);
    return ferror(fp) ? -1 : 0;
}

static int export_to(ggml_backend_sched_t sched, const char *path, int (*write)(ggml_backend_sched_t, FILE *)) {
    FILE *fp = path ? fopen(path, "w") : NULL;
    if (!fp) {
        fprintf(stderr, "ggprof: cannot write '%s'\n", path ? path : "(null)");
        return -1;
    }
    int rc = write(sched, fp);
    if (fclose(fp) != 0) rc = -1;
    return rc;
}

GGPROF_API int ggml_backend_sched_export_profiling_json(ggml_backend_sched_t sched, const char *filepath) {
    return export_to(sched, filepath, ggml_backend_sched_write_profiling_json);
}

GGPROF_API int ggml_backend_sched_export_profiling_text(ggml_backend_sched_t sched, const char *filepath) {
    return export_to(sched, filepath, ggml_backend_sched_write_profiling_text);
}
