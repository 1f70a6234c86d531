/* libggprof-cupti.so: CUDA kernels from CUPTI activity records, on CLOCK_MONOTONIC, attributed to ggml splits. */
#include <cupti.h>
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock_map.h"
#include "corr_table.h"
#include "device_api.h"
#include "graph_map.h"

/* How it works (docs/backends.md has the user's view):
 * - Loading: the CUDA driver loads this library in cuInit (CUDA_INJECTION64_PATH, set by kernels/cuda/cuda_hook.c
 *   in libggprof.so) and calls InitializeInjection. It finds libggprof.so's sink by name; libcupti is opened
 *   here at run time, so that neither library links CUDA, and a missing libcupti or symbol turns kernel timing
 *   off with one note while the program runs on.
 * - Records: CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL (which does not serialise kernels). CUPTI fills buffers we
 *   hand it and gives them back on its own thread: every 500 ms (cuptiActivityFlushPeriod), when a context is
 *   destroyed, and at exit (a forced flush). Each kernel becomes one KERNEL message.
 * - Clock: CUPTI converts GPU timestamps to a CPU clock itself; by default CLOCK_REALTIME, which NTP may slew
 *   or step. Where CUPTI has cuptiActivityRegisterTimestampCallback we hand it CLOCK_MONOTONIC, so records come
 *   on the host clock already. Either way the records are converted by a calibration: cuptiGetTimestamp (on the
 *   records' clock) bracketed by two clock_gettime readings, the tightest of 7, re-measured at most once a
 *   second as buffers complete and at exit; the offset moves only when two measurements disagree by more than
 *   their brackets (clock_map.h). With the callback the offset is about 0; without it (or with
 *   GGPROF_CUPTI_CLOCK=cupti) it is the REALTIME-MONOTONIC difference. The drift between the first and the last
 *   measurement goes into the exit note.
 * - Attribution: a callback on the launch APIs (runtime and driver, graph launches included) runs on the
 *   launching thread, where ggprof_current_place() names the ggml split being computed and the node ggml-cuda
 *   is computing (it asks ggml_is_empty about each node first: engine/interpose.c); the correlation id carries
 *   both to the kernel record (corr_table.h). With CUDA graphs the node is the one the kernel was captured for:
 *   the resource callbacks map each captured graph node, and its clones in the executable graph, to the ggml
 *   node's place in its split, and a replayed kernel's graph node id finds it (graph_map.h). */

#define FLUSH_PERIOD_MS 500
#define BUFFER_BYTES    (2u << 20)

#define CUPTI_REQUIRED(X)                                                                                      \
    X(cuptiActivityRegisterCallbacks)                                                                          \
    X(cuptiActivityEnable)                                                                                     \
    X(cuptiActivityGetNextRecord)                                                                              \
    X(cuptiActivityFlushAll)                                                                                   \
    X(cuptiGetTimestamp)
#define CUPTI_OPTIONAL(X)                                                                                      \
    X(cuptiActivityGetNumDroppedRecords)                                                                       \
    X(cuptiActivityFlushPeriod)                                                                                \
    X(cuptiActivityRegisterTimestampCallback)                                                                  \
    X(cuptiSubscribe)                                                                                          \
    X(cuptiEnableCallback)                                                                                     \
    X(cuptiGetResultString)                                                                                    \
    X(cuptiGetGraphNodeId)

static struct {
#define X(fn) __typeof__(&fn) fn;
    CUPTI_REQUIRED(X)
    CUPTI_OPTIONAL(X)
#undef X
} cu;

typedef char *(*demangle_fn)(const char *mangled, char *buf, size_t *len, int *status);

static const ggprof_device_api *g_api;
static pthread_once_t   g_once = PTHREAD_ONCE_INIT;
static _Atomic int      g_on;
static bool             g_monotonic; /* CUPTI's clock is CLOCK_MONOTONIC (our timestamp callback) */
static demangle_fn      g_demangle;
static ggprof_corr_table g_corr;
static ggprof_gmap      g_gmap = GGPROF_GMAP_INIT;
static pthread_mutex_t  g_clock_lock = PTHREAD_MUTEX_INITIALIZER;
static ggprof_clock_map g_clock;
static uint64_t         g_clock_at;      /* host time of the last measurement */
static _Atomic uint64_t g_kernels, g_attributed, g_on_node, g_incomplete, g_dropped, g_unmapped;
static char             g_cupti_path[PATH_MAX];

static const char *result_string(CUptiResult r) {
    const char *s = NULL;
    if (cu.cuptiGetResultString && cu.cuptiGetResultString(r, &s) == CUPTI_SUCCESS && s) return s;
    return "unknown CUPTI error";
}

/* ---- the clock ---- */

static uint64_t CUPTIAPI monotonic_ns(void) { return ggprof_now_ns(); }

/* Measures CUPTI's clock against CLOCK_MONOTONIC; returns the offset to add to a CUPTI timestamp. */
static uint64_t calibrate(bool force) {
    pthread_mutex_lock(&g_clock_lock);
    uint64_t now = ggprof_now_ns();
    if (force || !g_clock.valid || now - g_clock_at > 1000000000ull) {
        ggprof_clock_sample s[7];
        int n = 0;
        for (int i = 0; i < 7; i++) {
            uint64_t h0 = ggprof_now_ns(), ts = 0;
            if (cu.cuptiGetTimestamp(&ts) != CUPTI_SUCCESS) continue;
            s[n++] = (ggprof_clock_sample){ h0, ggprof_now_ns(), ts };
        }
        int best = ggprof_clock_best(s, n);
        if (best >= 0) ggprof_clock_calibrate(&g_clock, &s[best]);
        g_clock_at = now;
    }
    /* Applied in both modes: cuptiGetTimestamp is, by its contract, on the records' clock, so the offset holds
     * even if a CUPTI took the callback for one and not the other; with the callback it is about 0 and, the two
     * clocks being one, never re-anchors. */
    uint64_t off = g_clock.offset;
    pthread_mutex_unlock(&g_clock_lock);
    return off;
}

/* ---- kernel records ---- */

static void kernel_name(const char *mangled, char *out, size_t len) {
    if (!mangled || !*mangled) {
        snprintf(out, len, "(unnamed kernel)");
        return;
    }
    /* Demangled where the process has a C++ runtime (every nvcc-built program does): templates such as
     * ggml-cuda's mul_mat_vec_q<...> are unreadable otherwise. */
    if (g_demangle && mangled[0] == '_' && mangled[1] == 'Z') {
        int   status = -1;
        char *d      = g_demangle(mangled, NULL, NULL, &status);
        if (d && status == 0) {
            snprintf(out, len, "%s", d);
            free(d);
            return;
        }
        free(d);
    }
    snprintf(out, len, "%s", mangled);
}

static void report(const CUpti_ActivityKernel10 *k, uint64_t offset) {
    if (k->start == 0 || k->end < k->start) { /* still running at a forced flush */
        atomic_fetch_add(&g_incomplete, 1);
        return;
    }
    ggprof_msg_kernel m;
    memset(&m, 0, sizeof(m));
    m.h = (ggprof_msg_hdr){ sizeof(m), GGPROF_MSG_KERNEL, 0 };
    ggprof_place p;
    enum ggprof_cuda_attr a = ggprof_cuda_attribute(&g_corr, &g_gmap, k->correlationId, k->graphNodeId, &p);
    if (a != GGPROF_CUDA_ATTR_NONE) {
        m.graph_id   = p.graph_id;
        m.sched_id   = p.sched_id;
        m.split_id   = p.split_id;
        m.backend_id = p.backend_id;
        atomic_fetch_add(&g_attributed, 1);
    } else {
        m.graph_id   = GGPROF_GRAPH_NONE;
        m.split_id   = -1;
        m.backend_id = -1;
    }
    m.node_index = a == GGPROF_CUDA_ATTR_NODE ? p.node_index : -1;
    m.node_id    = a == GGPROF_CUDA_ATTR_NODE ? p.node_id : 0;
    if (a == GGPROF_CUDA_ATTR_NODE) atomic_fetch_add(&g_on_node, 1);
    m.api         = GGPROF_API_CUDA;
    m.device      = k->deviceId;
    m.stream      = k->streamId;
    m.correlation = k->correlationId;
    m.graph_node  = k->graphNodeId;
    m.start_ns    = k->start + offset;
    m.end_ns      = k->end + offset;
    kernel_name(k->name, m.name, sizeof(m.name));
    g_api->emit(&m.h);
    atomic_fetch_add(&g_kernels, 1);
}

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records) {
    void *p = NULL;
    if (posix_memalign(&p, 8, BUFFER_BYTES) != 0) p = NULL; /* CUPTI drops records and counts them */
    *buffer      = p;
    *size        = p ? BUFFER_BYTES : 0;
    *max_records = 0;
}

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size, size_t valid) {
    (void) size;
    uint64_t offset = calibrate(false);
    CUpti_Activity *rec = NULL;
    while (valid > 0 && cu.cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS) {
        /* Kernel10 is the record of both kinds in this CUPTI; later versions only add fields at the end. */
        if (rec->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || rec->kind == CUPTI_ACTIVITY_KIND_KERNEL) {
            report((const CUpti_ActivityKernel10 *) rec, offset);
        }
    }
    size_t dropped = 0;
    if (cu.cuptiActivityGetNumDroppedRecords &&
        cu.cuptiActivityGetNumDroppedRecords(ctx, stream, &dropped) == CUPTI_SUCCESS) {
        atomic_fetch_add(&g_dropped, dropped);
    }
    free(buffer);
}

/* ---- launches: which split the launching thread is computing ---- */

static void CUPTIAPI on_callback(void *user, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void *data) {
    (void) user;
    if (domain == CUPTI_CB_DOMAIN_RESOURCE) {
        /* A context's records must leave before it does (cudaDeviceReset, cuCtxDestroy). */
        if (cbid == CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING && atomic_load(&g_on)) cu.cuptiActivityFlushAll(0);
        /* CUDA graph nodes: which ggml node each kernel node was captured for (graph_map.h) */
        const CUpti_ResourceData *r = data;
        const CUpti_GraphData    *g = r ? r->resourceDescriptor : NULL;
        uint64_t node = 0, orig = 0;
        if (!g || !cu.cuptiGetGraphNodeId || cu.cuptiGetGraphNodeId(g->node, &node) != CUPTI_SUCCESS) return;
        ggprof_place p;
        if (cbid == CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED && g->nodeType == CU_GRAPH_NODE_TYPE_KERNEL &&
            g_api->place(&p) && p.node_index >= 0 && !ggprof_gmap_created(&g_gmap, node, &p)) {
            atomic_fetch_add(&g_unmapped, 1);
        } else if (cbid == CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED && g->nodeType == CU_GRAPH_NODE_TYPE_KERNEL &&
                   cu.cuptiGetGraphNodeId(g->originalNode, &orig) == CUPTI_SUCCESS) {
            ggprof_gmap_cloned(&g_gmap, node, orig);
        } else if (cbid == CUPTI_CBID_RESOURCE_GRAPHNODE_DESTROY_STARTING) {
            ggprof_gmap_drop(&g_gmap, node);
        }
        return;
    }
    const CUpti_CallbackData *d = data;
    ggprof_place p;
    if (d->callbackSite == CUPTI_API_ENTER && g_api->place(&p)) ggprof_corr_put(&g_corr, d->correlationId, &p);
}

static const CUpti_CallbackId k_runtime_launches[] = {
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunch_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunch_ptsz_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernelMultiDevice_v9000,
    CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000,
    CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000,
};
static const CUpti_CallbackId k_driver_launches[] = {
    CUPTI_DRIVER_TRACE_CBID_cuLaunch,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchGrid,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchGridAsync,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch,
    CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz,
};

/* Launch callbacks are for attribution only: without them (another CUPTI subscriber holds the slot) kernels
 * are still recorded, unattributed. */
static void subscribe(void) {
    CUpti_SubscriberHandle sub;
    CUptiResult r = CUPTI_ERROR_NOT_INITIALIZED;
    if (cu.cuptiSubscribe && cu.cuptiEnableCallback) r = cu.cuptiSubscribe(&sub, on_callback, NULL);
    if (r != CUPTI_SUCCESS) {
        g_api->note("cuda: kernels not attributed to ggml splits: cuptiSubscribe: %s", result_string(r));
        return;
    }
    for (size_t i = 0; i < sizeof(k_runtime_launches) / sizeof(k_runtime_launches[0]); i++) {
        cu.cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_RUNTIME_API, k_runtime_launches[i]);
    }
    for (size_t i = 0; i < sizeof(k_driver_launches) / sizeof(k_driver_launches[0]); i++) {
        cu.cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_DRIVER_API, k_driver_launches[i]);
    }
    cu.cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING);
    if (!cu.cuptiGetGraphNodeId) {
        g_api->note("cuda: CUDA graph kernels attributed to splits only: cuptiGetGraphNodeId not found");
        return;
    }
    cu.cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED);
    cu.cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED);
    cu.cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_GRAPHNODE_DESTROY_STARTING);
}

/* ---- start and exit ---- */

static void *open_cupti(void) {
    char soname[32], paths[5][PATH_MAX];
    snprintf(soname, sizeof(soname), "libcupti.so.%d", CUPTI_API_VERSION / 10000);
    const char *env  = getenv("GGPROF_CUPTI_LIB");
    const char *home = getenv("CUDA_HOME");
    int n = 0;
    if (env && *env) snprintf(paths[n++], PATH_MAX, "%s", env);
    snprintf(paths[n++], PATH_MAX, "%s", soname); /* the loader's search: LD_LIBRARY_PATH, ld.so.cache */
    if (home && *home) snprintf(paths[n++], PATH_MAX, "%s/lib64/%s", home, soname);
    snprintf(paths[n++], PATH_MAX, "/usr/local/cuda/lib64/%s", soname);
    snprintf(paths[n++], PATH_MAX, "/usr/local/cuda/extras/CUPTI/lib64/%s", soname);
    for (int i = 0; i < n; i++) {
        void *h = dlopen(paths[i], RTLD_NOW | RTLD_LOCAL);
        if (h) {
            snprintf(g_cupti_path, sizeof(g_cupti_path), "%s", paths[i]);
            return h;
        }
    }
    return NULL;
}

static void at_exit(void) {
    int on = 1;
    if (!atomic_compare_exchange_strong(&g_on, &on, 0)) return;
    cu.cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    calibrate(true);
    pthread_mutex_lock(&g_clock_lock);
    const ggprof_clock_map *c = &g_clock;
    double span_s = (double) ggprof_clock_diff(c->last_host, c->first_host) / 1e9;
    /* Two notes: one would not fit in GGPROF_MAX_STR. */
    g_api->note("cuda: %llu kernels, %llu attributed to ggml splits, %llu to their node; CUPTI dropped %llu records, "
                "%llu incomplete; %llu graph nodes unmapped (table full)",
                (unsigned long long) g_kernels, (unsigned long long) g_attributed, (unsigned long long) g_on_node,
                (unsigned long long) g_dropped, (unsigned long long) g_incomplete, (unsigned long long) g_unmapped);
    g_api->note("cuda: clock %s; CUPTI - CLOCK_MONOTONIC %lld ns +-%llu at start, %lld ns +-%llu at end, drift %.1f ppm "
                "(+-%.1f) over %.1f s, %u re-anchors",
                g_monotonic ? "CLOCK_MONOTONIC by timestamp callback" : "CUPTI's own, calibrated",
                (long long) -(int64_t) c->first_offset, (unsigned long long) c->first_uncertainty,
                (long long) -(int64_t) c->last_offset, (unsigned long long) c->last_uncertainty,
                ggprof_clock_drift_ppm(c), ggprof_clock_drift_bound_ppm(c), span_s, c->n_reanchors);
    pthread_mutex_unlock(&g_clock_lock);
}

static void start(void) {
    ggprof_device_api_fn get = (ggprof_device_api_fn) dlsym(RTLD_DEFAULT, GGPROF_DEVICE_API_SYMBOL);
    const ggprof_device_api *api = get ? get() : NULL;
    /* Not inside a `ggprof record` (the variable was inherited by a program without the engine): stay idle. */
    if (!api || api->version != GGPROF_DEVICE_API_VERSION || api->size < sizeof(*api) || !api->ready()) return;
    g_api = api;
    void *h = open_cupti();
    if (!h) {
        api->note("cuda: kernel timing off: libcupti.so.%d not found (set GGPROF_CUPTI_LIB to its path)",
                  CUPTI_API_VERSION / 10000);
        return;
    }
#define X(fn) cu.fn = (__typeof__(&fn)) dlsym(h, #fn);
    CUPTI_REQUIRED(X)
    CUPTI_OPTIONAL(X)
#undef X
#define X(fn)                                                                                                  \
    if (!cu.fn) {                                                                                              \
        api->note("cuda: kernel timing off: %s not found in %s", #fn, g_cupti_path);                          \
        return;                                                                                                \
    }
    CUPTI_REQUIRED(X)
#undef X
    g_demangle = (demangle_fn) dlsym(RTLD_DEFAULT, "__cxa_demangle");

    CUptiResult r = cu.cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed);
    /* After CUPTI is initialised (it may refuse before) and before any activity is enabled, as CUPTI requires,
     * so that every record uses it. */
    const char *clock = getenv("GGPROF_CUPTI_CLOCK");
    bool want_monotonic = !(clock && strcmp(clock, "cupti") == 0);
    g_monotonic = r == CUPTI_SUCCESS && want_monotonic && cu.cuptiActivityRegisterTimestampCallback &&
                  cu.cuptiActivityRegisterTimestampCallback(monotonic_ns) == CUPTI_SUCCESS;
    if (r == CUPTI_SUCCESS) r = cu.cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    if (r != CUPTI_SUCCESS) {
        api->note("cuda: kernel timing off: CUPTI activity tracing: %s", result_string(r));
        return;
    }
    calibrate(true);
    subscribe();
    if (cu.cuptiActivityFlushPeriod) cu.cuptiActivityFlushPeriod(FLUSH_PERIOD_MS);
    atomic_store(&g_on, 1);
    atexit(at_exit); /* registered inside cuInit, after the CUDA runtime's own: runs before its teardown */
}

/* Called by the CUDA driver in cuInit when CUDA_INJECTION64_PATH names this library. Always "success": a
 * profiler that cannot trace must not make cuInit fail. */
GGPROF_API int InitializeInjection(void) {
    pthread_once(&g_once, start);
    return 1;
}
