/* The schedulers the engine has seen and their backends. */
#include "schedulers.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define MAX_SCHEDS 64
static ggprof_sched    g_scheds[MAX_SCHEDS];
static ggprof_sched    g_unscheduled; /* sched_id 0 */
static uint32_t        g_next_sched_id = 1;
static pthread_mutex_t g_sched_lock    = PTHREAD_MUTEX_INITIALIZER;
/* The entry found last: a program computes on one scheduler over and over, and the table is 64 entries of
 * cold cache lines. Guarded by g_sched_lock. */
static ggprof_sched   *g_last_found;

/* A backend's device type, in the values of ggml 0.23 (CPU 0, GPU 1, IGPU 2, ACCEL 3): releases up to late 2024
 * had CPU, GPU, CPU_FULL, GPU_FULL, their CPU device reporting CPU_FULL (2). ggml's CPU device is named "CPU" in
 * every release. */
static int dev_type_of(ggml_backend_dev_t d) {
    const ggprof_ggml *g = &ggprof_eng.g;
    if (!d) return -1;
    const char *name = g->fn_ggml_backend_dev_name(d);
    return name && strcmp(name, "CPU") == 0 ? GGML_ABI_DEV_CPU : g->fn_ggml_backend_dev_type(d);
}

static void emit_backend(const ggprof_sched *se, int i) {
    const ggprof_ggml *g = &ggprof_eng.g;
    ggml_backend_t     b = se->backends[i];
    ggml_backend_dev_t d = g->fn_ggml_backend_get_device(b);
    ggprof_msg_backend m;
    memset(&m, 0, sizeof(m));
    m.h           = (ggprof_msg_hdr){ sizeof(m), GGPROF_MSG_BACKEND, 0 };
    m.sched_id    = se->id;
    m.backend_id  = i;
    m.device_type = dev_type_of(d);
    m.is_host     = m.device_type == GGML_ABI_DEV_CPU;
    snprintf(m.name, sizeof(m.name), "%s", g->fn_ggml_backend_name(b));
    snprintf(m.device, sizeof(m.device), "%s", d ? g->fn_ggml_backend_dev_name(d) : "unknown");
    snprintf(m.description, sizeof(m.description), "%s", d ? g->fn_ggml_backend_dev_description(d) : "");
    ggprof_emit(&m.h);
}

static void add_backend(ggprof_sched *se, ggml_backend_t b) {
    const ggprof_ggml *g = &ggprof_eng.g;
    if (se->n == GGPROF_MAX_BACKENDS) {
        static _Atomic bool said;
        if (!atomic_exchange(&said, true)) {
            ggprof_note("%s has more than %d backends: the splits of the others are recorded without a backend and"
                        " untimed", se->sched ? "a scheduler" : "the program (backends used without a scheduler)",
                        GGPROF_MAX_BACKENDS);
        }
        return;
    }
    ggml_backend_dev_t d = g->fn_ggml_backend_get_device(b);
    se->backends[se->n] = b;
    se->dev_type[se->n] = dev_type_of(d);
    se->is_cpu[se->n]   = se->dev_type[se->n] == GGML_ABI_DEV_CPU;
    emit_backend(se, se->n);
    se->n++;
}

/* Called with g_sched_lock held. */
static ggprof_sched *sched_register(ggml_backend_sched_t sched, struct ggprof_api_sched **old_api) {
    const ggprof_ggml *g = &ggprof_eng.g;
    ggprof_sched *se = NULL;
    for (int i = 0; i < MAX_SCHEDS && !se; i++) {
        if (g_scheds[i].sched == sched || g_scheds[i].sched == NULL) se = &g_scheds[i];
    }
    if (!se) return NULL;
    if (old_api) *old_api = se->api;
    memset(se, 0, sizeof(*se));
    se->sched = sched;
    se->id    = g_next_sched_id++;
    int n = g->fn_ggml_backend_sched_get_n_backends(sched);
    for (int i = 0; i < n; i++) add_backend(se, g->fn_ggml_backend_sched_get_backend(sched, i));
    return se;
}

ggprof_sched *ggprof_sched_register(ggml_backend_sched_t sched, struct ggprof_api_sched **old_api) {
    pthread_mutex_lock(&g_sched_lock);
    ggprof_sched *se = sched_register(sched, old_api);
    pthread_mutex_unlock(&g_sched_lock);
    return se;
}

ggprof_sched *ggprof_sched_find(ggml_backend_sched_t sched, bool create) {
    pthread_mutex_lock(&g_sched_lock);
    ggprof_sched *se = g_last_found && g_last_found->sched == sched ? g_last_found : NULL;
    for (int i = 0; i < MAX_SCHEDS && !se; i++) {
        if (g_scheds[i].sched == sched) se = &g_scheds[i];
    }
    /* A scheduler made before the engine was ready: its C API state (none yet) has nothing to hand back. */
    if (!se && create) se = sched_register(sched, NULL);
    if (se) g_last_found = se;
    pthread_mutex_unlock(&g_sched_lock);
    return se;
}

struct ggprof_api_sched *ggprof_sched_forget(ggml_backend_sched_t sched) {
    ggprof_sched *se = ggprof_sched_find(sched, false);
    if (!se) return NULL;
    pthread_mutex_lock(&g_sched_lock);
    se->sched = NULL;
    struct ggprof_api_sched *api = se->api;
    se->api = NULL;
    pthread_mutex_unlock(&g_sched_lock);
    return api;
}

int ggprof_sched_backend_index(const ggprof_sched *se, ggml_backend_t b) {
    for (int i = 0; i < se->n; i++) {
        if (se->backends[i] == b) return i;
    }
    return -1;
}

ggprof_sched *ggprof_sched_unscheduled(ggml_backend_t backend) {
    pthread_mutex_lock(&g_sched_lock);
    if (ggprof_sched_backend_index(&g_unscheduled, backend) < 0) add_backend(&g_unscheduled, backend);
    pthread_mutex_unlock(&g_sched_lock);
    return &g_unscheduled;
}

int ggprof_sched_locate(ggml_backend_t b, const ggprof_sched *hint, uint32_t *sched_id, bool *host) {
    const ggprof_sched *se = hint;
    int id = se ? ggprof_sched_backend_index(se, b) : -1;
    pthread_mutex_lock(&g_sched_lock);
    if (id < 0 && g_last_found && g_last_found->sched && (id = ggprof_sched_backend_index(g_last_found, b)) >= 0) {
        se = g_last_found;
    }
    for (int i = 0; i < MAX_SCHEDS && id < 0; i++) {
        if (g_scheds[i].sched && (id = ggprof_sched_backend_index(&g_scheds[i], b)) >= 0) se = &g_scheds[i];
    }
    if (id >= 0) {
        *sched_id = se->id;
        *host     = se->is_cpu[id] || se->dev_type[id] == GGML_ABI_DEV_ACCEL;
    }
    pthread_mutex_unlock(&g_sched_lock);
    return id;
}

struct ggprof_api_sched **ggprof_sched_api_slot(ggml_backend_sched_t sched) {
    ggprof_sched *se = ggprof_sched_find(sched, true);
    return se ? &se->api : NULL;
}
