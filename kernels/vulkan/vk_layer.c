/* libggprof-vulkan.so: a Vulkan layer timing each compute dispatch with timestamp queries, on CLOCK_MONOTONIC. */
#define VK_NO_PROTOTYPES
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vulkan/vk_layer.h>
#include <vulkan/vulkan.h>

#include "clock_map.h"
#include "device_api.h"
#include "vk_layer_name.h"

/* How it works (docs/backends.md has the user's view):
 * - Loading: the Vulkan loader loads this layer (VK_INSTANCE_LAYERS, set by kernels/vulkan/vk_hook.c in
 *   libggprof.so) and negotiates interface version 2. The layer finds libggprof.so's sink by name
 *   (ggprof_device_api_v1); without it (a program that inherited the variables) it only chains the calls.
 * - Recording: in each command buffer, every vkCmdDispatch* gets a timestamp before (TOP_OF_PIPE) and after
 *   (BOTTOM_OF_PIPE) in the layer's own query pools (128 dispatches per pool, reset in the command buffer when
 *   first used). Nothing is added between dispatches, so the graph is not serialised: on a GPU that overlaps
 *   independent dispatches the pairs may overlap too. Each pair remembers the ggml split the recording thread
 *   was computing (ggprof_current_place) and the bound compute pipeline.
 * - Reading: vkQueueSubmit marks command buffers submitted. After a successful vkWaitForFences, vkQueueWaitIdle
 *   or vkDeviceWaitIdle, and when a command buffer is re-recorded or freed (it cannot be pending then), every
 *   submitted command buffer whose queries are all available is read (vkGetQueryPoolResults, 64-bit, never
 *   waiting) and becomes one KERNEL message per dispatch.
 * - Clock: VK_EXT_calibrated_timestamps (enabled in vkCreateDevice when the device has it with the DEVICE and
 *   CLOCK_MONOTONIC domains) reads both clocks together; the tightest of 7 readings, again at most once a second
 *   as results are read, feeds clock_map.h. Without the extension the device is passed through untouched.
 * - Names: a pipeline named with vkSetDebugUtilsObjectNameEXT (ggml-vulkan does with GGML_VK_DEBUG_MARKERS=1)
 *   keeps its name; otherwise "dispatch (pipeline N)", N counting the device's compute pipelines in creation
 *   order, so the same program names the same shader alike from run to run.
 * Anything missing (no timestamps on a queue family, no calibration, a failed allocation) leaves that part
 * untimed with one note; the program's calls always go through. */

#define POOL_QUERIES  256 /* 128 dispatches */
#define MAX_DISPATCH  (1u << 16)
#define MAX_FAMILIES  16
#define N_BUCKETS     1024
#define NAME_BYTES    64

typedef struct {
    void                                          *key;
    VkInstance                                     inst;
    PFN_vkGetInstanceProcAddr                      gipa;
    PFN_vkDestroyInstance                          DestroyInstance;
    PFN_vkGetPhysicalDeviceProperties              GetPhysicalDeviceProperties;
    PFN_vkGetPhysicalDeviceQueueFamilyProperties   GetPhysicalDeviceQueueFamilyProperties;
    PFN_vkEnumerateDeviceExtensionProperties       EnumerateDeviceExtensionProperties;
    PFN_vkGetPhysicalDeviceCalibrateableTimeDomainsEXT GetCalibrateableTimeDomains;
    PFN_vkSetDebugUtilsObjectNameEXT               SetDebugUtilsObjectNameEXT;
} layer_instance;

#define DEVICE_FNS(X)                                                                                          \
    X(DestroyDevice)                                                                                           \
    X(CreateQueryPool)                                                                                         \
    X(DestroyQueryPool)                                                                                        \
    X(CmdResetQueryPool)                                                                                       \
    X(CmdWriteTimestamp)                                                                                       \
    X(GetQueryPoolResults)                                                                                     \
    X(CreateCommandPool)                                                                                       \
    X(DestroyCommandPool)                                                                                      \
    X(AllocateCommandBuffers)                                                                                  \
    X(FreeCommandBuffers)                                                                                      \
    X(BeginCommandBuffer)                                                                                      \
    X(CmdBindPipeline)                                                                                         \
    X(CmdDispatch)                                                                                             \
    X(CmdDispatchIndirect)                                                                                     \
    X(CmdDispatchBase)                                                                                         \
    X(CreateComputePipelines)                                                                                  \
    X(DestroyPipeline)                                                                                         \
    X(QueueSubmit)                                                                                             \
    X(QueueSubmit2)                                                                                            \
    X(WaitForFences)                                                                                           \
    X(QueueWaitIdle)                                                                                           \
    X(DeviceWaitIdle)

typedef struct layer_device {
    void                              *key;
    VkDevice                           dev;
    PFN_vkGetDeviceProcAddr            gdpa;
    layer_instance                    *inst;
    uint32_t                           index;
    bool                               timed; /* timestamps and calibration usable: intercept */
#define X(fn) PFN_vk##fn fn;
    DEVICE_FNS(X)
#undef X
    PFN_vkGetCalibratedTimestampsEXT   GetCalibratedTimestampsEXT;
    PFN_vkSetDebugUtilsObjectNameEXT   SetDebugUtilsObjectNameEXT;
    double                             period; /* ns per tick */
    uint32_t                           valid_bits[MAX_FAMILIES], n_families;
    uint32_t                           n_pipelines;
    ggprof_clock_map                   clock;
    uint64_t                           clock_at;
    bool                               noted_family;
    struct layer_device               *next;
} layer_device;

typedef struct {
    ggprof_place place;
    bool         placed;
    uint64_t     pipeline;
} dispatch_rec;

enum { CB_IDLE, CB_RECORDING, CB_SUBMITTED };

/* A command buffer, a command pool, a pipeline or a queue, by handle. */
typedef struct object {
    struct object *next;
    uint64_t       handle;
    int            kind;
    layer_device  *dev;
    /* command pool: queue family. pipeline: its number. queue: its number. */
    uint32_t       num;
    char          *name; /* pipeline: debug name */
    /* command buffer */
    uint64_t       pool;
    int            state;
    bool           timed;
    uint32_t       queue;
    uint64_t       pipeline;
    VkQueryPool   *qpools;
    uint32_t       n_qpools, n_reset;
    dispatch_rec  *d;
    uint32_t       n, cap;
} object;

enum { OBJ_CB, OBJ_POOL, OBJ_PIPELINE, OBJ_QUEUE };

static const ggprof_device_api *g_api;
static pthread_mutex_t          g_lock = PTHREAD_MUTEX_INITIALIZER;
static layer_instance           g_inst[8];
static int                      g_n_inst;
static layer_device            *g_devices;
static uint32_t                 g_n_devices, g_n_queues;
static object                  *g_objects[N_BUCKETS];
static object                 **g_submitted;
static size_t                   g_n_submitted, g_cap_submitted;
static uint64_t                 g_dispatches, g_attributed, g_lost, g_correlation; /* under g_lock */
static _Atomic uint64_t         g_untimed; /* counted while recording, without the lock */
static _Atomic bool             g_described; /* ready() said yes at a dispatch: the process is in the trace */
static bool                     g_atexit;

static inline void *key_of(const void *handle) { return *(void *const *) handle; }

static layer_instance *find_instance(const void *handle) {
    void *k = handle ? key_of(handle) : NULL;
    for (int i = 0; i < g_n_inst; i++) {
        if (g_inst[i].key == k) return &g_inst[i];
    }
    /* Physical devices carry the loader's instance dispatch in principle; one instance is the usual case. */
    return g_n_inst ? &g_inst[g_n_inst - 1] : NULL;
}

static layer_device *find_device(const void *handle) {
    void *k = key_of(handle);
    pthread_mutex_lock(&g_lock);
    layer_device *d = g_devices;
    while (d && d->key != k) d = d->next;
    pthread_mutex_unlock(&g_lock);
    return d;
}

/* ---- the object map (callers hold g_lock) ---- */

static object *obj_find(uint64_t handle, int kind) {
    object *o = g_objects[(handle >> 4) % N_BUCKETS];
    while (o && !(o->handle == handle && o->kind == kind)) o = o->next;
    return o;
}

static object *obj_get(uint64_t handle, int kind, layer_device *dev) {
    object *o = obj_find(handle, kind);
    if (o) return o;
    o = calloc(1, sizeof(*o));
    if (!o) return NULL;
    o->handle = handle;
    o->kind   = kind;
    o->dev    = dev;
    o->next   = g_objects[(handle >> 4) % N_BUCKETS];
    g_objects[(handle >> 4) % N_BUCKETS] = o;
    return o;
}

static void unsubmit(object *cb) {
    for (size_t i = 0; i < g_n_submitted; i++) {
        if (g_submitted[i] == cb) {
            g_submitted[i] = g_submitted[--g_n_submitted];
            return;
        }
    }
}

static void obj_free(object *o) {
    object **p = &g_objects[(o->handle >> 4) % N_BUCKETS];
    while (*p && *p != o) p = &(*p)->next;
    if (*p) *p = o->next;
    if (o->kind == OBJ_CB) {
        unsubmit(o);
        for (uint32_t i = 0; i < o->n_qpools; i++) o->dev->DestroyQueryPool(o->dev->dev, o->qpools[i], NULL);
        free(o->qpools);
        free(o->d);
    }
    free(o->name);
    free(o);
}

/* ---- the clock ---- */

static void calibrate(layer_device *d, bool force) {
    uint64_t now = ggprof_now_ns();
    if (!force && d->clock.valid && now - d->clock_at < 1000000000ull) return;
    const VkCalibratedTimestampInfoEXT info[2] = {
        { VK_STRUCTURE_TYPE_CALIBRATED_TIMESTAMP_INFO_EXT, NULL, VK_TIME_DOMAIN_DEVICE_EXT },
        { VK_STRUCTURE_TYPE_CALIBRATED_TIMESTAMP_INFO_EXT, NULL, VK_TIME_DOMAIN_CLOCK_MONOTONIC_EXT },
    };
    ggprof_clock_sample s[7];
    int n = 0;
    for (int i = 0; i < 7; i++) {
        uint64_t ts[2], dev = 0;
        if (d->GetCalibratedTimestampsEXT(d->dev, 2, info, ts, &dev) != VK_SUCCESS) continue;
        /* The two readings were taken within maxDeviation ns of each other: that is the bracket. */
        uint64_t dns = (uint64_t) ((double) ts[0] * d->period);
        s[n++] = (ggprof_clock_sample){ ts[1] - dev, ts[1] + dev, dns };
    }
    int best = ggprof_clock_best(s, n);
    if (best >= 0) ggprof_clock_calibrate(&d->clock, &s[best]);
    d->clock_at = now;
}

/* ---- reading results (callers hold g_lock) ---- */

static uint64_t ticks_ns(const layer_device *d, uint64_t ticks, uint32_t bits) {
    if (bits < 64) ticks &= (1ull << bits) - 1;
    return d->period == 1.0 ? ticks : (uint64_t) ((double) ticks * d->period);
}

static void pipeline_name(layer_device *d, uint64_t pipeline, char *out, size_t len) {
    object *p = pipeline ? obj_find(pipeline, OBJ_PIPELINE) : NULL;
    if (p && p->name) snprintf(out, len, "%s", p->name);
    else if (p) snprintf(out, len, "dispatch (pipeline %u)", p->num);
    else snprintf(out, len, "dispatch (no pipeline)");
    (void) d;
}

/* Reads a submitted command buffer's timestamps if they are all there; returns false while some are not. */
static bool harvest(object *cb, bool final) {
    layer_device *d = cb->dev;
    if (cb->n == 0) return true;
    uint32_t total = 2 * cb->n;
    uint64_t *v    = malloc((size_t) total * 2 * sizeof(uint64_t));
    if (!v) return true;
    for (uint32_t p = 0; p * POOL_QUERIES < total; p++) {
        uint32_t cnt = total - p * POOL_QUERIES;
        if (cnt > POOL_QUERIES) cnt = POOL_QUERIES;
        VkResult r = d->GetQueryPoolResults(d->dev, cb->qpools[p], 0, cnt, (size_t) cnt * 16, v + 2 * p * POOL_QUERIES,
                                            16, VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WITH_AVAILABILITY_BIT);
        if (r != VK_SUCCESS) {
            if (final) g_lost += cb->n;
            free(v);
            return final;
        }
    }
    calibrate(d, false);
    uint32_t fam  = 0;
    object  *pool = obj_find(cb->pool, OBJ_POOL);
    if (pool) fam = pool->num;
    uint32_t bits = fam < d->n_families ? d->valid_bits[fam] : 64;
    for (uint32_t i = 0; i < cb->n; i++) {
        const dispatch_rec *r = &cb->d[i];
        ggprof_msg_kernel   m;
        memset(&m, 0, sizeof(m));
        m.h = (ggprof_msg_hdr){ sizeof(m), GGPROF_MSG_KERNEL, 0 };
        if (r->placed) {
            m.graph_id   = r->place.graph_id;
            m.sched_id   = r->place.sched_id;
            m.split_id   = r->place.split_id;
            m.backend_id = r->place.backend_id;
            g_attributed++;
        } else {
            m.graph_id   = GGPROF_GRAPH_NONE;
            m.split_id   = -1;
            m.backend_id = -1;
        }
        uint64_t t0 = ticks_ns(d, v[4 * i], bits), t1 = ticks_ns(d, v[4 * i + 2], bits);
        if (bits < 64 && t1 < t0) t1 += (uint64_t) ((double) (1ull << bits) * d->period); /* wrapped */
        m.node_index  = r->placed ? r->place.node_index : -1;
        m.node_id     = r->placed && r->place.node_index >= 0 ? r->place.node_id : 0;
        m.api         = GGPROF_API_VULKAN;
        m.device      = d->index;
        m.stream      = cb->queue;
        m.correlation = ++g_correlation;
        object *pl    = r->pipeline ? obj_find(r->pipeline, OBJ_PIPELINE) : NULL;
        m.graph_node  = pl ? pl->num : 0;
        m.start_ns    = ggprof_clock_to_host(&d->clock, t0);
        m.end_ns      = ggprof_clock_to_host(&d->clock, t1);
        pipeline_name(d, r->pipeline, m.name, sizeof(m.name));
        g_api->emit(&m.h);
        g_dispatches++;
    }
    free(v);
    cb->n = 0;
    return true;
}

static void harvest_submitted(layer_device *d) {
    for (size_t i = 0; i < g_n_submitted;) {
        object *cb = g_submitted[i];
        if ((!d || cb->dev == d) && harvest(cb, false)) {
            cb->state      = CB_IDLE;
            g_submitted[i] = g_submitted[--g_n_submitted];
        } else {
            i++;
        }
    }
}

/* A command buffer that is re-recorded, reset or freed is not pending: what it holds is final. */
static void retire(object *cb) {
    if (cb->state == CB_SUBMITTED) {
        harvest(cb, true);
        unsubmit(cb);
    } else if (cb->state == CB_RECORDING) {
        g_lost += cb->n; /* recorded, never submitted */
    }
    cb->n     = 0;
    cb->state = CB_IDLE;
}

/* ---- instance ---- */

static PFN_vkVoidFunction VKAPI_CALL layer_GetInstanceProcAddr(VkInstance instance, const char *name);
static PFN_vkVoidFunction VKAPI_CALL layer_GetDeviceProcAddr(VkDevice device, const char *name);

static VkResult VKAPI_CALL layer_CreateInstance(const VkInstanceCreateInfo *ci, const VkAllocationCallbacks *alloc,
                                                VkInstance *out) {
    VkLayerInstanceCreateInfo *li = (VkLayerInstanceCreateInfo *) ci->pNext;
    while (li && !(li->sType == VK_STRUCTURE_TYPE_LOADER_INSTANCE_CREATE_INFO && li->function == VK_LAYER_LINK_INFO)) {
        li = (VkLayerInstanceCreateInfo *) li->pNext;
    }
    if (!li) return VK_ERROR_INITIALIZATION_FAILED;
    PFN_vkGetInstanceProcAddr gipa = li->u.pLayerInfo->pfnNextGetInstanceProcAddr;
    li->u.pLayerInfo               = li->u.pLayerInfo->pNext; /* the next layer finds its own link */
    PFN_vkCreateInstance create    = (PFN_vkCreateInstance) gipa(VK_NULL_HANDLE, "vkCreateInstance");
    if (!create) return VK_ERROR_INITIALIZATION_FAILED;
    VkResult r = create(ci, alloc, out);
    if (r != VK_SUCCESS) return r;

    pthread_mutex_lock(&g_lock);
    if (!g_api) {
        ggprof_device_api_fn get = (ggprof_device_api_fn) dlsym(RTLD_DEFAULT, GGPROF_DEVICE_API_SYMBOL);
        const ggprof_device_api *api = get ? get() : NULL;
        /* Not inside a `ggprof record`: chain the calls, time nothing. ready() is asked in vkCreateDevice: it
         * describes the process to the collector, which a program that only lists devices (node-llama-cpp's
         * GPU probe in a child process) should not do. */
        if (api && api->version == GGPROF_DEVICE_API_VERSION && api->size >= sizeof(*api)) g_api = api;
    }
    if (g_n_inst < (int) (sizeof(g_inst) / sizeof(g_inst[0]))) {
        layer_instance *in = &g_inst[g_n_inst++];
        memset(in, 0, sizeof(*in));
        in->key  = key_of(*out);
        in->inst = *out;
        in->gipa = gipa;
        in->DestroyInstance = (PFN_vkDestroyInstance) gipa(*out, "vkDestroyInstance");
        in->GetPhysicalDeviceProperties =
            (PFN_vkGetPhysicalDeviceProperties) gipa(*out, "vkGetPhysicalDeviceProperties");
        in->GetPhysicalDeviceQueueFamilyProperties =
            (PFN_vkGetPhysicalDeviceQueueFamilyProperties) gipa(*out, "vkGetPhysicalDeviceQueueFamilyProperties");
        in->EnumerateDeviceExtensionProperties =
            (PFN_vkEnumerateDeviceExtensionProperties) gipa(*out, "vkEnumerateDeviceExtensionProperties");
        in->GetCalibrateableTimeDomains = (PFN_vkGetPhysicalDeviceCalibrateableTimeDomainsEXT) gipa(
            *out, "vkGetPhysicalDeviceCalibrateableTimeDomainsEXT");
        in->SetDebugUtilsObjectNameEXT =
            (PFN_vkSetDebugUtilsObjectNameEXT) gipa(*out, "vkSetDebugUtilsObjectNameEXT");
    }
    pthread_mutex_unlock(&g_lock);
    return VK_SUCCESS;
}

static void VKAPI_CALL layer_DestroyInstance(VkInstance instance, const VkAllocationCallbacks *alloc) {
    pthread_mutex_lock(&g_lock);
    layer_instance *in = find_instance(instance);
    PFN_vkDestroyInstance destroy = in ? in->DestroyInstance : NULL;
    if (in) *in = g_inst[--g_n_inst];
    pthread_mutex_unlock(&g_lock);
    if (destroy) destroy(instance, alloc);
}

/* ---- device ---- */

static void at_exit(void);
static void note_clock(layer_device *d);

static bool has_extension(const VkExtensionProperties *e, uint32_t n, const char *name) {
    for (uint32_t i = 0; i < n; i++) {
        if (strcmp(e[i].extensionName, name) == 0) return true;
    }
    return false;
}

/* Whether the device can put its timestamps on CLOCK_MONOTONIC: VK_EXT_calibrated_timestamps with both domains. */
static bool can_calibrate(layer_instance *in, VkPhysicalDevice pd) {
    uint32_t n = 0;
    if (!in->EnumerateDeviceExtensionProperties || !in->GetCalibrateableTimeDomains ||
        in->EnumerateDeviceExtensionProperties(pd, NULL, &n, NULL) != VK_SUCCESS) {
        return false;
    }
    VkExtensionProperties *e = calloc(n ? n : 1, sizeof(*e));
    bool ok = e && in->EnumerateDeviceExtensionProperties(pd, NULL, &n, e) == VK_SUCCESS &&
              has_extension(e, n, VK_EXT_CALIBRATED_TIMESTAMPS_EXTENSION_NAME);
    free(e);
    if (!ok) return false;
    VkTimeDomainEXT dom[8];
    uint32_t        nd = 8;
    if (in->GetCalibrateableTimeDomains(pd, &nd, dom) < 0) return false;
    bool dev = false, mono = false;
    for (uint32_t i = 0; i < nd; i++) {
        dev |= dom[i] == VK_TIME_DOMAIN_DEVICE_EXT;
        mono |= dom[i] == VK_TIME_DOMAIN_CLOCK_MONOTONIC_EXT;
    }
    return dev && mono;
}

static VkResult VKAPI_CALL layer_CreateDevice(VkPhysicalDevice pd, const VkDeviceCreateInfo *ci,
                                              const VkAllocationCallbacks *alloc, VkDevice *out) {
    VkLayerDeviceCreateInfo *li = (VkLayerDeviceCreateInfo *) ci->pNext;
    while (li && !(li->sType == VK_STRUCTURE_TYPE_LOADER_DEVICE_CREATE_INFO && li->function == VK_LAYER_LINK_INFO)) {
        li = (VkLayerDeviceCreateInfo *) li->pNext;
    }
    if (!li) return VK_ERROR_INITIALIZATION_FAILED;
    PFN_vkGetInstanceProcAddr gipa = li->u.pLayerInfo->pfnNextGetInstanceProcAddr;
    PFN_vkGetDeviceProcAddr   gdpa = li->u.pLayerInfo->pfnNextGetDeviceProcAddr;
    li->u.pLayerInfo               = li->u.pLayerInfo->pNext;
    pthread_mutex_lock(&g_lock);
    layer_instance *in = find_instance(pd);
    pthread_mutex_unlock(&g_lock);
    PFN_vkCreateDevice create = (PFN_vkCreateDevice) gipa(in ? in->inst : VK_NULL_HANDLE, "vkCreateDevice");
    if (!create) return VK_ERROR_INITIALIZATION_FAILED;

    /* The extension is enabled for our own use when the program did not ask for it: it adds a query, no state. */
    bool calib = g_api && in && can_calibrate(in, pd);
    VkDeviceCreateInfo ci2   = *ci;
    const char       **exts = NULL;
    if (calib) {
        bool asked = false;
        for (uint32_t i = 0; i < ci->enabledExtensionCount; i++) {
            asked |= strcmp(ci->ppEnabledExtensionNames[i], VK_EXT_CALIBRATED_TIMESTAMPS_EXTENSION_NAME) == 0;
        }
        if (!asked) {
            exts = calloc(ci->enabledExtensionCount + 1, sizeof(*exts));
            if (exts) {
                for (uint32_t i = 0; i < ci->enabledExtensionCount; i++) exts[i] = ci->ppEnabledExtensionNames[i];
                exts[ci->enabledExtensionCount] = VK_EXT_CALIBRATED_TIMESTAMPS_EXTENSION_NAME;
                ci2.enabledExtensionCount       = ci->enabledExtensionCount + 1;
                ci2.ppEnabledExtensionNames     = exts;
            } else {
                calib = false;
            }
        }
    }
    VkResult r = create(pd, &ci2, alloc, out);
    if (r != VK_SUCCESS && exts) { /* never fail the program for our extension */
        calib = false;
        r     = create(pd, ci, alloc, out);
    }
    free(exts);
    if (r != VK_SUCCESS) return r;

    layer_device *d = calloc(1, sizeof(*d));
    if (!d) { /* the loader would build the device's dispatch from our GetDeviceProcAddr, which needs d */
        PFN_vkDestroyDevice destroy = (PFN_vkDestroyDevice) gdpa(*out, "vkDestroyDevice");
        if (destroy) destroy(*out, alloc);
        return VK_ERROR_OUT_OF_HOST_MEMORY;
    }
    d->key  = key_of(*out);
    d->dev  = *out;
    d->gdpa = gdpa;
    d->inst = in;
#define X(fn) d->fn = (PFN_vk##fn) gdpa(*out, "vk" #fn);
    DEVICE_FNS(X)
#undef X
    d->SetDebugUtilsObjectNameEXT = (PFN_vkSetDebugUtilsObjectNameEXT) gdpa(*out, "vkSetDebugUtilsObjectNameEXT");
    if (calib) d->GetCalibratedTimestampsEXT = (PFN_vkGetCalibratedTimestampsEXT) gdpa(*out, "vkGetCalibratedTimestampsEXT");

    pthread_mutex_lock(&g_lock);
    d->index = g_n_devices++;
    d->next  = g_devices;
    g_devices = d;
    if (g_api) {
        VkPhysicalDeviceProperties props;
        in->GetPhysicalDeviceProperties(pd, &props);
        uint32_t nf = 0;
        in->GetPhysicalDeviceQueueFamilyProperties(pd, &nf, NULL);
        VkQueueFamilyProperties fam[MAX_FAMILIES];
        if (nf > MAX_FAMILIES) nf = MAX_FAMILIES;
        in->GetPhysicalDeviceQueueFamilyProperties(pd, &nf, fam);
        bool any = false;
        for (uint32_t i = 0; i < nf; i++) {
            d->valid_bits[i] = fam[i].timestampValidBits;
            any |= fam[i].timestampValidBits != 0;
        }
        d->n_families = nf;
        d->period     = props.limits.timestampPeriod;
        bool fns      = d->CreateQueryPool && d->DestroyQueryPool && d->CmdResetQueryPool && d->CmdWriteTimestamp &&
                   d->GetQueryPoolResults && d->BeginCommandBuffer && d->QueueSubmit;
        bool calibrated = calib && d->GetCalibratedTimestampsEXT;
        if (calibrated && any && d->period > 0 && fns) {
            d->timed = true;
            calibrate(d, true);
            if (!g_atexit) atexit(at_exit);
            g_atexit = true;
        } else if (g_api->ready()) { /* says why, once per device, in a recorded process only */
            const char *why = !calibrated    ? "no VK_EXT_calibrated_timestamps with the CLOCK_MONOTONIC domain"
                              : !any || d->period <= 0 ? "no timestamp support"
                                                       : "a core function is missing";
            g_api->note("vulkan: dispatch timing off on device %u (%s): %s", d->index, props.deviceName, why);
        }
    }
    pthread_mutex_unlock(&g_lock);
    return VK_SUCCESS;
}

static void VKAPI_CALL layer_DestroyDevice(VkDevice device, const VkAllocationCallbacks *alloc) {
    layer_device *d = find_device(device);
    if (!d) return; /* cannot happen: the device was created through us */
    pthread_mutex_lock(&g_lock);
    if (d->timed) {
        harvest_submitted(d);
        note_clock(d);
    }
    for (int b = 0; b < N_BUCKETS; b++) {
        for (object *o = g_objects[b], *nx; o; o = nx) {
            nx = o->next;
            if (o->dev == d) obj_free(o);
        }
    }
    for (layer_device **p = &g_devices; *p; p = &(*p)->next) {
        if (*p == d) {
            *p = d->next;
            break;
        }
    }
    d->timed = false;
    pthread_mutex_unlock(&g_lock);
    d->DestroyDevice(device, alloc);
    /* d itself is kept: a racing call that found it just before must not read freed memory; one per device. */
}

/* ---- recording ---- */

static VkResult VKAPI_CALL layer_CreateCommandPool(VkDevice device, const VkCommandPoolCreateInfo *ci,
                                                   const VkAllocationCallbacks *alloc, VkCommandPool *out) {
    layer_device *d = find_device(device);
    VkResult      r = d->CreateCommandPool(device, ci, alloc, out);
    if (r == VK_SUCCESS && d->timed) {
        pthread_mutex_lock(&g_lock);
        object *o = obj_get((uint64_t) *out, OBJ_POOL, d);
        if (o) o->num = ci->queueFamilyIndex;
        pthread_mutex_unlock(&g_lock);
    }
    return r;
}

static void VKAPI_CALL layer_DestroyCommandPool(VkDevice device, VkCommandPool pool, const VkAllocationCallbacks *alloc) {
    layer_device *d = find_device(device);
    if (d->timed) {
        pthread_mutex_lock(&g_lock);
        for (int b = 0; b < N_BUCKETS; b++) {
            for (object *o = g_objects[b], *nx; o; o = nx) {
                nx = o->next;
                if (o->kind == OBJ_CB && o->pool == (uint64_t) pool) {
                    retire(o);
                    obj_free(o);
                }
            }
        }
        object *o = obj_find((uint64_t) pool, OBJ_POOL);
        if (o) obj_free(o);
        pthread_mutex_unlock(&g_lock);
    }
    d->DestroyCommandPool(device, pool, alloc);
}

static VkResult VKAPI_CALL layer_AllocateCommandBuffers(VkDevice device, const VkCommandBufferAllocateInfo *ai,
                                                        VkCommandBuffer *out) {
    layer_device *d = find_device(device);
    VkResult      r = d->AllocateCommandBuffers(device, ai, out);
    if (r == VK_SUCCESS && d->timed && ai->level == VK_COMMAND_BUFFER_LEVEL_PRIMARY) {
        pthread_mutex_lock(&g_lock);
        for (uint32_t i = 0; i < ai->commandBufferCount; i++) {
            object *o = obj_get((uint64_t) out[i], OBJ_CB, d);
            if (o) o->pool = (uint64_t) ai->commandPool;
        }
        pthread_mutex_unlock(&g_lock);
    }
    return r;
}

static void VKAPI_CALL layer_FreeCommandBuffers(VkDevice device, VkCommandPool pool, uint32_t n,
                                                const VkCommandBuffer *cbs) {
    layer_device *d = find_device(device);
    if (d->timed) {
        pthread_mutex_lock(&g_lock);
        for (uint32_t i = 0; i < n; i++) {
            object *o = cbs[i] ? obj_find((uint64_t) cbs[i], OBJ_CB) : NULL;
            if (!o) continue;
            retire(o);
            obj_free(o);
        }
        pthread_mutex_unlock(&g_lock);
    }
    d->FreeCommandBuffers(device, pool, n, cbs);
}

static VkResult VKAPI_CALL layer_BeginCommandBuffer(VkCommandBuffer cb, const VkCommandBufferBeginInfo *bi) {
    layer_device *d = find_device(cb);
    object       *o = NULL;
    if (d->timed) {
        pthread_mutex_lock(&g_lock);
        o = obj_find((uint64_t) cb, OBJ_CB);
        if (o) {
            retire(o);
            o->state    = CB_RECORDING;
            o->n_reset  = 0;
            o->pipeline = 0;
            object *pool = obj_find(o->pool, OBJ_POOL);
            uint32_t fam = pool ? pool->num : 0;
            o->timed     = fam < d->n_families && d->valid_bits[fam] != 0;
            if (!o->timed && !d->noted_family) {
                d->noted_family = true;
                g_api->note("vulkan: device %u: queue family %u has no timestamps: its dispatches are not timed",
                            d->index, fam);
            }
        }
        pthread_mutex_unlock(&g_lock);
    }
    return d->BeginCommandBuffer(cb, bi);
}

static void VKAPI_CALL layer_CmdBindPipeline(VkCommandBuffer cb, VkPipelineBindPoint bp, VkPipeline pipeline) {
    layer_device *d = find_device(cb);
    if (d->timed && bp == VK_PIPELINE_BIND_POINT_COMPUTE) {
        pthread_mutex_lock(&g_lock);
        object *o = obj_find((uint64_t) cb, OBJ_CB);
        if (o) o->pipeline = (uint64_t) pipeline;
        pthread_mutex_unlock(&g_lock);
    }
    d->CmdBindPipeline(cb, bp, pipeline);
}

/* Before a dispatch: finds the command buffer's next query pair, writing the first timestamp; NULL if untimed.
 * The recording thread owns the command buffer (Vulkan requires it), so only the map lookup needs the lock. */
static object *before_dispatch(layer_device *d, VkCommandBuffer cb, uint32_t *query) {
    if (!d->timed) return NULL;
    pthread_mutex_lock(&g_lock);
    object *o = obj_find((uint64_t) cb, OBJ_CB);
    pthread_mutex_unlock(&g_lock);
    if (!o || !o->timed || o->state != CB_RECORDING) return NULL;
    /* Asked at each dispatch, not at vkCreateDevice: a yes describes the process to the collector, and a
     * process that creates a device without computing (node-llama-cpp's GPU probe in a child) stays out. */
    if (!g_api->ready()) return NULL;
    atomic_store(&g_described, true);
    if (o->n >= MAX_DISPATCH) {
        atomic_fetch_add(&g_untimed, 1);
        return NULL;
    }
    uint32_t q = 2 * o->n, p = q / POOL_QUERIES;
    if (p >= o->n_qpools) {
        VkQueryPool *np = realloc(o->qpools, (p + 1) * sizeof(*np));
        if (!np) return NULL;
        o->qpools = np;
        VkQueryPoolCreateInfo qi = { VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO, NULL, 0, VK_QUERY_TYPE_TIMESTAMP,
                                     POOL_QUERIES, 0 };
        if (d->CreateQueryPool(d->dev, &qi, NULL, &o->qpools[p]) != VK_SUCCESS) return NULL;
        o->n_qpools = p + 1;
    }
    if (o->n >= o->cap) {
        uint32_t      cap = o->cap ? 2 * o->cap : 64;
        dispatch_rec *nd  = realloc(o->d, cap * sizeof(*nd));
        if (!nd) return NULL;
        o->d   = nd;
        o->cap = cap;
    }
    if (p >= o->n_reset) { /* each pool is reset once per recording, where first used: outside any render pass */
        d->CmdResetQueryPool(cb, o->qpools[p], 0, POOL_QUERIES);
        o->n_reset = p + 1;
    }
    dispatch_rec *r = &o->d[o->n];
    r->placed       = g_api->place(&r->place);
    r->pipeline     = o->pipeline;
    d->CmdWriteTimestamp(cb, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, o->qpools[p], q % POOL_QUERIES);
    *query = q;
    return o;
}

static void after_dispatch(layer_device *d, VkCommandBuffer cb, object *o, uint32_t q) {
    if (!o) return;
    d->CmdWriteTimestamp(cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, o->qpools[q / POOL_QUERIES], q % POOL_QUERIES + 1);
    o->n++;
}

static void VKAPI_CALL layer_CmdDispatch(VkCommandBuffer cb, uint32_t x, uint32_t y, uint32_t z) {
    layer_device *d = find_device(cb);
    uint32_t      q = 0;
    object       *o = before_dispatch(d, cb, &q);
    d->CmdDispatch(cb, x, y, z);
    after_dispatch(d, cb, o, q);
}

static void VKAPI_CALL layer_CmdDispatchIndirect(VkCommandBuffer cb, VkBuffer buf, VkDeviceSize off) {
    layer_device *d = find_device(cb);
    uint32_t      q = 0;
    object       *o = before_dispatch(d, cb, &q);
    d->CmdDispatchIndirect(cb, buf, off);
    after_dispatch(d, cb, o, q);
}

static void VKAPI_CALL layer_CmdDispatchBase(VkCommandBuffer cb, uint32_t bx, uint32_t by, uint32_t bz, uint32_t x,
                                             uint32_t y, uint32_t z) {
    layer_device *d = find_device(cb);
    uint32_t      q = 0;
    object       *o = before_dispatch(d, cb, &q);
    d->CmdDispatchBase(cb, bx, by, bz, x, y, z);
    after_dispatch(d, cb, o, q);
}

/* ---- pipelines and their names ---- */

static VkResult VKAPI_CALL layer_CreateComputePipelines(VkDevice device, VkPipelineCache cache, uint32_t n,
                                                        const VkComputePipelineCreateInfo *ci,
                                                        const VkAllocationCallbacks *alloc, VkPipeline *out) {
    layer_device *d = find_device(device);
    VkResult      r = d->CreateComputePipelines(device, cache, n, ci, alloc, out);
    if (r >= 0 && d->timed) {
        pthread_mutex_lock(&g_lock);
        for (uint32_t i = 0; i < n; i++) {
            if (!out[i]) continue;
            object *o = obj_get((uint64_t) out[i], OBJ_PIPELINE, d);
            if (o) o->num = ++d->n_pipelines;
        }
        pthread_mutex_unlock(&g_lock);
    }
    return r;
}

static void VKAPI_CALL layer_DestroyPipeline(VkDevice device, VkPipeline pipeline, const VkAllocationCallbacks *alloc) {
    layer_device *d = find_device(device);
    /* Kept while recorded dispatches may still name it; the handle may be reused, which only renames. */
    d->DestroyPipeline(device, pipeline, alloc);
}

static VkResult VKAPI_CALL layer_SetDebugUtilsObjectNameEXT(VkDevice device, const VkDebugUtilsObjectNameInfoEXT *ni) {
    layer_device *d = find_device(device);
    PFN_vkSetDebugUtilsObjectNameEXT next = d && d->SetDebugUtilsObjectNameEXT ? d->SetDebugUtilsObjectNameEXT
                                            : d && d->inst                      ? d->inst->SetDebugUtilsObjectNameEXT
                                                                                : NULL;
    if (d && d->timed && ni->objectType == VK_OBJECT_TYPE_PIPELINE && ni->pObjectName) {
        pthread_mutex_lock(&g_lock);
        object *o = obj_get(ni->objectHandle, OBJ_PIPELINE, d);
        if (o) {
            if (!o->num) o->num = ++d->n_pipelines;
            free(o->name);
            o->name = strndup(ni->pObjectName, NAME_BYTES);
        }
        pthread_mutex_unlock(&g_lock);
    }
    return next ? next(device, ni) : VK_SUCCESS;
}

/* ---- submission and waits ---- */

static void mark_submitted(layer_device *d, VkQueue queue, VkCommandBuffer cb) {
    object *o = obj_find((uint64_t) cb, OBJ_CB);
    if (!o || o->state == CB_IDLE) return;
    object *q = obj_get((uint64_t) queue, OBJ_QUEUE, d);
    if (q && !q->num) q->num = ++g_n_queues;
    o->queue = q ? q->num - 1 : 0;
    if (o->state == CB_SUBMITTED) return; /* submitted again: the queries hold the latest run */
    o->state = CB_SUBMITTED;
    if (g_n_submitted == g_cap_submitted) {
        size_t   cap = g_cap_submitted ? 2 * g_cap_submitted : 64;
        object **ns  = realloc(g_submitted, cap * sizeof(*ns));
        if (!ns) {
            g_lost += o->n;
            o->n     = 0;
            o->state = CB_IDLE;
            return;
        }
        g_submitted     = ns;
        g_cap_submitted = cap;
    }
    g_submitted[g_n_submitted++] = o;
}

static VkResult VKAPI_CALL layer_QueueSubmit(VkQueue queue, uint32_t n, const VkSubmitInfo *si, VkFence fence) {
    layer_device *d = find_device(queue);
    VkResult      r = d->QueueSubmit(queue, n, si, fence);
    if (r == VK_SUCCESS && d->timed) {
        pthread_mutex_lock(&g_lock);
        for (uint32_t i = 0; i < n; i++) {
            for (uint32_t j = 0; j < si[i].commandBufferCount; j++) mark_submitted(d, queue, si[i].pCommandBuffers[j]);
        }
        pthread_mutex_unlock(&g_lock);
    }
    return r;
}

static VkResult VKAPI_CALL layer_QueueSubmit2(VkQueue queue, uint32_t n, const VkSubmitInfo2 *si, VkFence fence) {
    layer_device *d = find_device(queue);
    VkResult      r = d->QueueSubmit2(queue, n, si, fence);
    if (r == VK_SUCCESS && d->timed) {
        pthread_mutex_lock(&g_lock);
        for (uint32_t i = 0; i < n; i++) {
            for (uint32_t j = 0; j < si[i].commandBufferInfoCount; j++) {
                mark_submitted(d, queue, si[i].pCommandBufferInfos[j].commandBuffer);
            }
        }
        pthread_mutex_unlock(&g_lock);
    }
    return r;
}

static void after_wait(layer_device *d) {
    if (!d->timed) return;
    pthread_mutex_lock(&g_lock);
    harvest_submitted(d);
    pthread_mutex_unlock(&g_lock);
}

static VkResult VKAPI_CALL layer_WaitForFences(VkDevice device, uint32_t n, const VkFence *f, VkBool32 all, uint64_t t) {
    layer_device *d = find_device(device);
    VkResult      r = d->WaitForFences(device, n, f, all, t);
    if (r == VK_SUCCESS) after_wait(d);
    return r;
}

static VkResult VKAPI_CALL layer_QueueWaitIdle(VkQueue queue) {
    layer_device *d = find_device(queue);
    VkResult      r = d->QueueWaitIdle(queue);
    if (r == VK_SUCCESS) after_wait(d);
    return r;
}

static VkResult VKAPI_CALL layer_DeviceWaitIdle(VkDevice device) {
    layer_device *d = find_device(device);
    VkResult      r = d->DeviceWaitIdle(device);
    if (r == VK_SUCCESS) after_wait(d);
    return r;
}

/* ---- exit ---- */

/* The clock note of a device, once: when it is destroyed, or at exit. Callers hold g_lock. */
static void note_clock(layer_device *d) {
    if (!d->timed || !atomic_load(&g_described)) return;
    calibrate(d, true);
    const ggprof_clock_map *c = &d->clock;
    g_api->note("vulkan: device %u clock by VK_EXT_calibrated_timestamps; device - CLOCK_MONOTONIC %lld ns +-%llu "
                "at start, %lld ns +-%llu at end, drift %.1f ppm (+-%.1f) over %.1f s, %u re-anchors",
                d->index, (long long) -(int64_t) c->first_offset, (unsigned long long) c->first_uncertainty,
                (long long) -(int64_t) c->last_offset, (unsigned long long) c->last_uncertainty,
                ggprof_clock_drift_ppm(c), ggprof_clock_drift_bound_ppm(c),
                (double) ggprof_clock_diff(c->last_host, c->first_host) / 1e9, c->n_reanchors);
}

static void at_exit(void) {
    if (!atomic_load(&g_described)) return; /* nothing timed: say nothing */
    pthread_mutex_lock(&g_lock);
    harvest_submitted(NULL); /* what finished but was never waited for */
    g_api->note("vulkan: %llu dispatches timed, %llu attributed to ggml splits; %llu lost (never submitted or "
                "unreadable), %llu untimed (over %u in one command buffer)",
                (unsigned long long) g_dispatches, (unsigned long long) g_attributed, (unsigned long long) g_lost,
                (unsigned long long) g_untimed, MAX_DISPATCH);
    for (layer_device *d = g_devices; d; d = d->next) note_clock(d);
    pthread_mutex_unlock(&g_lock);
}

/* ---- the loader's interface ---- */

#define INTERCEPT_DEVICE(X)                                                                                    \
    X(GetDeviceProcAddr)                                                                                       \
    X(DestroyDevice)                                                                                           \
    X(CreateCommandPool)                                                                                       \
    X(DestroyCommandPool)                                                                                      \
    X(AllocateCommandBuffers)                                                                                  \
    X(FreeCommandBuffers)                                                                                      \
    X(BeginCommandBuffer)                                                                                      \
    X(CmdBindPipeline)                                                                                         \
    X(CmdDispatch)                                                                                             \
    X(CmdDispatchIndirect)                                                                                     \
    X(CmdDispatchBase)                                                                                         \
    X(CreateComputePipelines)                                                                                  \
    X(DestroyPipeline)                                                                                         \
    X(SetDebugUtilsObjectNameEXT)                                                                              \
    X(QueueSubmit)                                                                                             \
    X(QueueSubmit2)                                                                                            \
    X(WaitForFences)                                                                                           \
    X(QueueWaitIdle)                                                                                           \
    X(DeviceWaitIdle)

/* Our version of a device command, or NULL. Outside a recording only what the chain needs is intercepted. */
static PFN_vkVoidFunction device_intercept(const char *name) {
    if (strncmp(name, "vk", 2) != 0) return NULL;
    const char *n = name + 2;
    if (!g_api) {
        if (strcmp(n, "GetDeviceProcAddr") == 0) return (PFN_vkVoidFunction) layer_GetDeviceProcAddr;
        if (strcmp(n, "DestroyDevice") == 0) return (PFN_vkVoidFunction) layer_DestroyDevice;
        return NULL;
    }
#define X(fn)                                                                                                  \
    if (strcmp(n, #fn) == 0) return (PFN_vkVoidFunction) layer_##fn;
    INTERCEPT_DEVICE(X)
#undef X
    /* Aliases from extensions that became core. */
    if (strcmp(n, "CmdDispatchBaseKHR") == 0) return (PFN_vkVoidFunction) layer_CmdDispatchBase;
    if (strcmp(n, "QueueSubmit2KHR") == 0) return (PFN_vkVoidFunction) layer_QueueSubmit2;
    return NULL;
}

static PFN_vkVoidFunction VKAPI_CALL layer_GetDeviceProcAddr(VkDevice device, const char *name) {
    layer_device *d = find_device(device);
    if (!d) return NULL;
    PFN_vkVoidFunction next = d->gdpa(device, name);
    /* A command the driver lacks stays absent: the program must see what it would see without us. */
    PFN_vkVoidFunction ours = device_intercept(name);
    if (ours && (next || strcmp(name, "vkGetDeviceProcAddr") == 0)) {
        /* The non-core aliases need the core name's pointer to call on. */
        if (strcmp(name, "vkCmdDispatchBaseKHR") == 0 && !d->CmdDispatchBase) d->CmdDispatchBase = (PFN_vkCmdDispatchBase) next;
        if (strcmp(name, "vkQueueSubmit2KHR") == 0 && !d->QueueSubmit2) d->QueueSubmit2 = (PFN_vkQueueSubmit2) next;
        return ours;
    }
    return next;
}

static PFN_vkVoidFunction VKAPI_CALL layer_GetInstanceProcAddr(VkInstance instance, const char *name) {
    if (strcmp(name, "vkGetInstanceProcAddr") == 0) return (PFN_vkVoidFunction) layer_GetInstanceProcAddr;
    if (strcmp(name, "vkCreateInstance") == 0) return (PFN_vkVoidFunction) layer_CreateInstance;
    if (strcmp(name, "vkDestroyInstance") == 0) return (PFN_vkVoidFunction) layer_DestroyInstance;
    if (strcmp(name, "vkCreateDevice") == 0) return (PFN_vkVoidFunction) layer_CreateDevice;
    if (!instance) return NULL;
    pthread_mutex_lock(&g_lock);
    layer_instance *in = find_instance(instance);
    pthread_mutex_unlock(&g_lock);
    if (!in) return NULL;
    PFN_vkVoidFunction next = in->gipa(instance, name);
    PFN_vkVoidFunction ours = device_intercept(name);
    if (ours && next && strcmp(name, "vkCmdDispatchBaseKHR") != 0 && strcmp(name, "vkQueueSubmit2KHR") != 0) return ours;
    return next;
}

GGPROF_API VkResult VKAPI_CALL vkNegotiateLoaderLayerInterfaceVersion(VkNegotiateLayerInterface *v) {
    if (!v || v->sType != LAYER_NEGOTIATE_INTERFACE_STRUCT) return VK_ERROR_INITIALIZATION_FAILED;
    if (v->loaderLayerInterfaceVersion < 2) return VK_ERROR_INITIALIZATION_FAILED;
    v->loaderLayerInterfaceVersion = 2;
    v->pfnGetInstanceProcAddr      = layer_GetInstanceProcAddr;
    v->pfnGetDeviceProcAddr        = layer_GetDeviceProcAddr;
    v->pfnGetPhysicalDeviceProcAddr = NULL;
    return VK_SUCCESS;
}
