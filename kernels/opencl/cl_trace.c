/* OpenCL kernel timing from outside the program: profiling queues, an event per kernel, times on the host clock. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cl_abi.h"
#include "clock_map.h"
#include "engine.h"

/* How it works (docs/backends.md has the user's view):
 * - Queues: clCreateCommandQueue[WithProperties] get CL_QUEUE_PROFILING_ENABLE added. A device that refuses it
 *   gets the program's own properties back, and its queues are not timed.
 * - Kernels: clEnqueueNDRangeKernel and clEnqueueTask always get an event: the caller's (retained, so that
 *   its release does not free it under us) or one of ours. The kernel's name is read at enqueue, when the
 *   kernel object surely exists; so is the ggml split the thread is computing (ggprof_current_place).
 * - Completion: no event callbacks. A callback runs on the implementation's own thread, where the spec leaves
 *   most OpenCL calls undefined and where dropping the last reference of the event being reported is unsafe
 *   on some implementations. Instead, pending events are harvested on the program's own threads, at calls
 *   that imply or follow completion (clFinish, clWaitForEvents, clReleaseEvent), every 32 enqueues, and at
 *   exit. On an in-order queue, commands complete in order: one incomplete event ends the scan of its queue,
 *   so a harvest costs O(queues + completed), not O(pending).
 * - Clock: each device's clock is put on CLOCK_MONOTONIC (clock_map.h) by clGetDeviceAndHostTimer where the
 *   platform has it (2.1+), else by the QUEUED stamp of a marker on a private profiling queue, bracketed by two
 *   host readings; the tightest of 5. It is re-measured at most once a second, and only when the program
 *   itself waits (clFinish, clWaitForEvents: the device is idle then, so a marker does not stall it), and at
 *   exit. Every kernel's QUEUED stamp is also checked against the host bracket of its own clEnqueue call:
 *   the worst miss and the drift between the first and last calibration go into one note per device. */

/* ---- the ICD ABI of the functions we stand in for ---- */

GGPROF_API ggcl_create_queue_fn       clCreateCommandQueue;
GGPROF_API ggcl_create_queue_props_fn clCreateCommandQueueWithProperties;
GGPROF_API ggcl_enqueue_ndrange_fn    clEnqueueNDRangeKernel;
GGPROF_API ggcl_enqueue_task_fn       clEnqueueTask;
GGPROF_API ggcl_queue_fn              clFinish;
GGPROF_API ggcl_wait_fn               clWaitForEvents;
GGPROF_API ggcl_event_fn              clReleaseEvent;

/* ---- the OpenCL functions ggprof calls itself, resolved once ---- */

static struct {
    ggcl_event_info_fn        *event_profiling, *event;
    ggcl_kernel_info_fn       *kernel;
    ggcl_queue_info_fn        *queue;
    ggcl_device_info_fn       *device;
    ggcl_device_ids_fn        *device_ids;
    ggcl_event_fn             *retain_event, *release_event;
    ggcl_wait_fn              *wait;
    ggcl_create_queue_fn      *create_queue;
    ggcl_queue_fn             *release_queue;
    ggcl_marker_fn            *marker;
    ggcl_device_host_timer_fn *device_host_timer;
} cl;

/* ---- state ---- */

enum { CLOCK_NONE, CLOCK_TIMER, CLOCK_MARKER, CLOCK_ENQUEUE };
static const char *const k_clock_names[] = { "none", "clGetDeviceAndHostTimer", "markers", "kernel stamps" };

#define MAX_DEVICES 16
typedef struct {
    ggcl_device_id     id;
    uint32_t           ordinal;
    int                method;
    ggcl_command_queue cal_queue; /* CLOCK_MARKER: ours, with profiling, never given work by the program */
    uint64_t           last_cal_ns;
    uint64_t           n_kernels;
    ggprof_clock_map   clock;
    char               name[64];
} cl_device;

#define MAX_QUEUES 256
typedef struct {
    ggcl_command_queue q;
    int16_t            dev;    /* index in g_devs, -1: not timed (no profiling) */
    bool               in_order;
} cl_queue;

typedef struct {
    ggcl_event         ev;
    ggcl_command_queue q;
    uint64_t           h0, h1; /* host clock around the clEnqueue call */
    ggprof_place       place;
    uint16_t           name;   /* index in g_names */
    int16_t            dev;
    bool               in_order;
} pending;

#define MAX_PENDING  16384
#define MAX_NAMES    512
#define NAME_LEN     GGPROF_MAX_STR
#define HARVEST_EVERY 32

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic int     g_state;   /* 0 not set up, 1 on, -1 off for good */
static cl_device       g_devs[MAX_DEVICES];
static int             g_n_devs;
static cl_queue        g_queues[MAX_QUEUES];
static int             g_n_queues;
static pending        *g_pending;
static int             g_n_pending;
static _Atomic int     g_any_pending; /* g_n_pending > 0, readable without the lock */
static int             g_since_harvest;
static char            g_names[MAX_NAMES][NAME_LEN];
static int             g_n_names;
static uint64_t        g_dropped, g_failed, g_unprofiled;
static _Atomic uint64_t g_untimed_queue; /* launches on queues without profiling (made out of our sight) */
static bool            g_refused_noted;

/* ---- setup ---- */

static void *resolve(const char *name, const void *caller, const void *self) {
    return ggprof_resolve_real(name, caller, self);
}

static void after_fork_child(void) {
    /* OpenCL does not survive fork: the child's copy of the parent's events, queues and devices is not the
     * child's to use, not even at its exit. Its kernels (if it dares) go untimed. */
    g_n_pending = 0;
    atomic_store(&g_any_pending, 0);
    pthread_mutex_init(&g_lock, NULL);
    atomic_store(&g_state, -1);
}

static void at_exit(void);

static void setup(const void *caller) {
    pthread_mutex_lock(&g_lock);
    if (atomic_load(&g_state) != 0) {
        pthread_mutex_unlock(&g_lock);
        return;
    }
    cl.event_profiling   = (ggcl_event_info_fn *) resolve("clGetEventProfilingInfo", caller, NULL);
    cl.event             = (ggcl_event_info_fn *) resolve("clGetEventInfo", caller, NULL);
    cl.kernel            = (ggcl_kernel_info_fn *) resolve("clGetKernelInfo", caller, NULL);
    cl.queue             = (ggcl_queue_info_fn *) resolve("clGetCommandQueueInfo", caller, NULL);
    cl.device            = (ggcl_device_info_fn *) resolve("clGetDeviceInfo", caller, NULL);
    cl.device_ids        = (ggcl_device_ids_fn *) resolve("clGetDeviceIDs", caller, NULL);
    cl.retain_event      = (ggcl_event_fn *) resolve("clRetainEvent", caller, NULL);
    cl.release_event     = (ggcl_event_fn *) resolve("clReleaseEvent", caller, (void *) clReleaseEvent);
    cl.wait              = (ggcl_wait_fn *) resolve("clWaitForEvents", caller, (void *) clWaitForEvents);
    cl.create_queue      = (ggcl_create_queue_fn *) resolve("clCreateCommandQueue", caller,
                                                         (void *) clCreateCommandQueue);
    cl.release_queue     = (ggcl_queue_fn *) resolve("clReleaseCommandQueue", caller, NULL);
    cl.marker            = (ggcl_marker_fn *) resolve("clEnqueueMarkerWithWaitList", caller, NULL);
    cl.device_host_timer = (ggcl_device_host_timer_fn *) resolve("clGetDeviceAndHostTimer", caller, NULL);
    const char *need = !cl.event_profiling ? "clGetEventProfilingInfo"
                       : !cl.event         ? "clGetEventInfo"
                       : !cl.kernel        ? "clGetKernelInfo"
                       : !cl.queue         ? "clGetCommandQueueInfo"
                       : !cl.device        ? "clGetDeviceInfo"
                       : !cl.retain_event  ? "clRetainEvent"
                       : !cl.release_event ? "clReleaseEvent"
                                           : NULL;
    g_pending = need ? NULL : malloc(MAX_PENDING * sizeof(*g_pending));
    if (need || !g_pending) {
        ggprof_note("opencl: kernel timing off: %s%s", need ? need : "out of memory", need ? " not found" : "");
        atomic_store(&g_state, -1);
    } else {
        snprintf(g_names[0], NAME_LEN, "%s", "(unnamed kernel)");
        g_n_names = 1;
        pthread_atfork(NULL, NULL, after_fork_child);
        atexit(at_exit); /* registered after the OpenCL implementation set itself up: runs before its teardown */
        atomic_store(&g_state, 1);
    }
    pthread_mutex_unlock(&g_lock);
}

/* True when this call should be timed: recording, not inside ggprof, OpenCL helpers found. */
static bool tracing(const void *caller) {
    if (ggprof_busy || atomic_load_explicit(&g_state, memory_order_acquire) < 0 || !ggprof_device_ready()) return false;
    if (atomic_load_explicit(&g_state, memory_order_acquire) == 0) setup(caller);
    return atomic_load_explicit(&g_state, memory_order_acquire) > 0;
}

/* ---- device clocks ---- */

static bool profiling_stamp(ggcl_event ev, ggcl_info what, uint64_t *out) {
    ggcl_ulong v = 0;
    if (cl.event_profiling(ev, what, sizeof(v), &v, NULL) != GGCL_SUCCESS) return false;
    *out = v;
    return true;
}

static void calibrate(cl_device *d) {
    ggprof_clock_sample s[5];
    int n = 0;
    for (int i = 0; i < 5; i++) {
        ggcl_ulong dev = 0, host = 0;
        ggcl_event ev  = NULL;
        uint64_t   h0  = ggprof_now_ns();
        if (d->method == CLOCK_TIMER) {
            if (cl.device_host_timer(d->id, &dev, &host) != GGCL_SUCCESS) continue;
            s[n] = (ggprof_clock_sample){ h0, ggprof_now_ns(), dev };
            n++;
        } else if (d->method == CLOCK_MARKER) {
            if (cl.marker(d->cal_queue, 0, NULL, &ev) != GGCL_SUCCESS) continue;
            uint64_t h1 = ggprof_now_ns();
            uint64_t queued;
            if (cl.wait(1, &ev) == GGCL_SUCCESS && profiling_stamp(ev, GGCL_PROFILING_COMMAND_QUEUED, &queued)) {
                s[n++] = (ggprof_clock_sample){ h0, h1, queued };
            }
            cl.release_event(ev);
        }
    }
    int best = ggprof_clock_best(s, n);
    if (best >= 0) ggprof_clock_calibrate(&d->clock, &s[best]);
    d->last_cal_ns = ggprof_now_ns();
}

/* Picks how to read this device's clock against the host's. Called with g_lock held. */
static void choose_clock(cl_device *d, ggcl_context ctx) {
    /* GGPROF_OPENCL_CLOCK=marker|enqueue skips the better methods: for the tests of the fall-backs. */
    const char *force = getenv("GGPROF_OPENCL_CLOCK");
    bool no_timer = force && (strcmp(force, "marker") == 0 || strcmp(force, "enqueue") == 0);
    bool no_marker = force && strcmp(force, "enqueue") == 0;
    ggcl_ulong dev, host;
    if (!no_timer && cl.device_host_timer && cl.device_host_timer(d->id, &dev, &host) == GGCL_SUCCESS) {
        d->method = CLOCK_TIMER;
    } else if (!no_marker && cl.marker && cl.wait && cl.create_queue && ctx) {
        ggcl_int err = 0;
        d->cal_queue = cl.create_queue(ctx, d->id, GGCL_QUEUE_PROFILING_ENABLE, &err);
        d->method    = d->cal_queue ? CLOCK_MARKER : CLOCK_ENQUEUE;
    } else {
        d->method = CLOCK_ENQUEUE; /* calibrated from the kernels' own QUEUED stamps as they complete */
    }
    if (d->method != CLOCK_ENQUEUE) calibrate(d);
    if (d->method != CLOCK_ENQUEUE && !d->clock.valid) { /* no reading came back: the kernels' stamps will do */
        if (d->cal_queue && cl.release_queue) cl.release_queue(d->cal_queue);
        d->cal_queue = NULL;
        d->method    = CLOCK_ENQUEUE;
    }
}

static int device_index(ggcl_device_id id, ggcl_context ctx) {
    for (int i = 0; i < g_n_devs; i++) {
        if (g_devs[i].id == id) return i;
    }
    if (g_n_devs == MAX_DEVICES) return -1;
    cl_device *d = &g_devs[g_n_devs];
    memset(d, 0, sizeof(*d));
    d->id      = id;
    d->ordinal = (uint32_t) g_n_devs;
    /* The ordinal is the device's place in its platform's list, as clinfo numbers it. */
    ggcl_platform_id plat = NULL;
    ggcl_device_id   ids[64];
    ggcl_uint        n = 0;
    if (cl.device_ids && cl.device(id, GGCL_DEVICE_PLATFORM, sizeof(plat), &plat, NULL) == GGCL_SUCCESS &&
        cl.device_ids(plat, GGCL_DEVICE_TYPE_ALL, 64, ids, &n) == GGCL_SUCCESS) {
        for (ggcl_uint i = 0; i < n && i < 64; i++) {
            if (ids[i] == id) d->ordinal = i;
        }
    }
    if (cl.device(id, GGCL_DEVICE_NAME, sizeof(d->name), d->name, NULL) != GGCL_SUCCESS) d->name[0] = '\0';
    d->name[sizeof(d->name) - 1] = '\0';
    choose_clock(d, ctx);
    return g_n_devs++;
}

/* ---- queues ---- */

/* Learns a queue's device and properties from OpenCL itself, so that queues created before or around us
 * (an extension's constructor) are handled too. Called with g_lock held; returns the entry. */
static cl_queue *queue_register(ggcl_command_queue q) {
    cl_queue *e = NULL;
    for (int i = 0; i < g_n_queues && !e; i++) {
        if (g_queues[i].q == q) e = &g_queues[i];
    }
    if (!e && g_n_queues < MAX_QUEUES) e = &g_queues[g_n_queues++];
    if (!e) return NULL;
    ggcl_device_id dev = NULL;
    ggcl_context   ctx = NULL;
    ggcl_command_queue_properties props = 0;
    e->q        = q;
    e->dev      = -1;
    e->in_order = false;
    if (cl.queue(q, GGCL_QUEUE_DEVICE, sizeof(dev), &dev, NULL) != GGCL_SUCCESS ||
        cl.queue(q, GGCL_QUEUE_CONTEXT, sizeof(ctx), &ctx, NULL) != GGCL_SUCCESS ||
        cl.queue(q, GGCL_QUEUE_PROPERTIES, sizeof(props), &props, NULL) != GGCL_SUCCESS) {
        return e;
    }
    e->in_order = !(props & GGCL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE);
    if (props & GGCL_QUEUE_PROFILING_ENABLE) e->dev = (int16_t) device_index(dev, ctx);
    return e;
}

static cl_queue queue_lookup(ggcl_command_queue q) {
    pthread_mutex_lock(&g_lock);
    cl_queue *e = NULL;
    for (int i = 0; i < g_n_queues && !e; i++) {
        if (g_queues[i].q == q) e = &g_queues[i];
    }
    if (!e) e = queue_register(q);
    cl_queue r = e ? *e : (cl_queue){ q, -1, false };
    pthread_mutex_unlock(&g_lock);
    return r;
}

/* ---- harvesting completed kernels ---- */

static void report(const pending *p) {
    uint64_t queued, start, end;
    if (!profiling_stamp(p->ev, GGCL_PROFILING_COMMAND_QUEUED, &queued) ||
        !profiling_stamp(p->ev, GGCL_PROFILING_COMMAND_START, &start) ||
        !profiling_stamp(p->ev, GGCL_PROFILING_COMMAND_END, &end)) {
        g_unprofiled++;
        return;
    }
    cl_device *d = &g_devs[p->dev];
    ggprof_clock_sample s = { p->h0, p->h1, queued };
    if (d->method == CLOCK_ENQUEUE) ggprof_clock_calibrate(&d->clock, &s);
    ggprof_clock_check(&d->clock, &s);
    d->n_kernels++;
    ggprof_msg_kernel m;
    memset(&m, 0, sizeof(m));
    m.h          = (ggprof_msg_hdr){ sizeof(m), GGPROF_MSG_KERNEL, 0 };
    m.graph_id   = p->place.graph_id;
    m.sched_id   = p->place.sched_id;
    m.split_id   = p->place.split_id;
    m.backend_id = p->place.backend_id;
    m.node_index = -1; /* a split's kernels are enqueued by the backend's own loop over its nodes: not visible */
    m.api        = GGPROF_API_OPENCL;
    m.device     = d->ordinal;
    m.stream     = (uint64_t) (uintptr_t) p->q;
    m.start_ns   = ggprof_clock_to_host(&d->clock, start);
    m.end_ns     = ggprof_clock_to_host(&d->clock, end);
    memcpy(m.name, g_names[p->name], sizeof(m.name));
    ggprof_emit(&m.h);
}

/* Reports every pending kernel that has completed. `wait_lock`: at exit, where the lock must be had; elsewhere
 * a harvest already running on another thread is enough. `may_calibrate`: the program is waiting for the
 * device anyway, so re-measuring its clock costs it nothing. */
static void harvest(bool wait_lock, bool may_calibrate) {
    if (wait_lock) {
        pthread_mutex_lock(&g_lock);
    } else if (pthread_mutex_trylock(&g_lock) != 0) {
        return;
    }
    if (may_calibrate) {
        uint64_t now = ggprof_now_ns();
        for (int i = 0; i < g_n_devs; i++) {
            cl_device *d = &g_devs[i];
            if ((d->method == CLOCK_TIMER || d->method == CLOCK_MARKER) && now - d->last_cal_ns > 1000000000ull) {
                calibrate(d);
            }
        }
    }
    ggcl_command_queue blocked[16];
    int n_blocked = 0, w = 0;
    for (int i = 0; i < g_n_pending; i++) {
        pending *p = &g_pending[i];
        bool skip = false;
        for (int b = 0; b < n_blocked && !skip; b++) skip = blocked[b] == p->q;
        ggcl_int status = 1;
        if (!skip &&
            cl.event(p->ev, GGCL_EVENT_COMMAND_EXECUTION_STATUS, sizeof(status), &status, NULL) != GGCL_SUCCESS) {
            status = -1;
        }
        if (skip || status > GGCL_COMPLETE) { /* queued, submitted or running */
            if (!skip && p->in_order && n_blocked < 16) blocked[n_blocked++] = p->q;
            g_pending[w++] = *p;
            continue;
        }
        if (status == GGCL_COMPLETE) {
            report(p);
        } else {
            g_failed++; /* the command ended with an error: no times to report */
        }
        cl.release_event(p->ev);
    }
    g_n_pending     = w;
    g_since_harvest = 0;
    atomic_store_explicit(&g_any_pending, w > 0, memory_order_relaxed);
    pthread_mutex_unlock(&g_lock);
}

/* ---- kernel launches ---- */

/* Called with g_lock held. */
static uint16_t intern_name(const char *name) {
    for (int i = 1; i < g_n_names; i++) {
        if (strcmp(g_names[i], name) == 0) return (uint16_t) i;
    }
    if (g_n_names == MAX_NAMES) return 0;
    snprintf(g_names[g_n_names], NAME_LEN, "%s", name);
    return (uint16_t) g_n_names++;
}

static void kernel_name(ggcl_kernel k, char *out, size_t len) {
    size_t need = 0;
    out[0] = '\0';
    if (cl.kernel(k, GGCL_KERNEL_FUNCTION_NAME, len, out, &need) == GGCL_SUCCESS) {
        out[len - 1] = '\0';
        return;
    }
    /* Longer than the wire's name: read it whole, keep the start. */
    char *tmp = need > len ? malloc(need) : NULL;
    if (tmp && cl.kernel(k, GGCL_KERNEL_FUNCTION_NAME, need, tmp, NULL) == GGCL_SUCCESS) {
        snprintf(out, len, "%s", tmp);
    }
    free(tmp);
}

typedef struct {
    cl_queue     queue;
    ggprof_place place;
    char         name[NAME_LEN];
} launch;

static bool launch_begin(launch *l, ggcl_command_queue q, ggcl_kernel k) {
    l->queue = queue_lookup(q);
    if (l->queue.dev < 0) {
        atomic_fetch_add_explicit(&g_untimed_queue, 1, memory_order_relaxed);
        return false;
    }
    ggprof_current_place(&l->place);
    kernel_name(k, l->name, sizeof(l->name));
    return true;
}

/* The kernel was enqueued with event `ev`, ours when `owned`. */
static void launch_end(const launch *l, ggcl_event ev, bool owned, uint64_t h0, uint64_t h1) {
    if (!owned) cl.retain_event(ev); /* the program may release its event before the kernel runs */
    pthread_mutex_lock(&g_lock);
    bool full = g_n_pending == MAX_PENDING;
    if (!full) {
        pending *p  = &g_pending[g_n_pending++];
        p->ev       = ev;
        p->q        = l->queue.q;
        p->h0       = h0;
        p->h1       = h1;
        p->place    = l->place;
        p->name     = intern_name(l->name);
        p->dev      = l->queue.dev;
        p->in_order = l->queue.in_order;
        atomic_store_explicit(&g_any_pending, 1, memory_order_relaxed);
    }
    bool due = ++g_since_harvest >= HARVEST_EVERY || g_n_pending > MAX_PENDING / 2;
    if (full) g_dropped++;
    pthread_mutex_unlock(&g_lock);
    if (full) cl.release_event(ev); /* the device is 16k kernels behind: this one goes untimed, counted */
    if (due) harvest(false, false);
}

GGPROF_API ggcl_int clEnqueueNDRangeKernel(ggcl_command_queue q, ggcl_kernel k, ggcl_uint dim, const size_t *offset,
                                           const size_t *global, const size_t *local, ggcl_uint n_wait,
                                           const ggcl_event *wait, ggcl_event *event) {
    REAL(clEnqueueNDRangeKernel);
    launch l;
    if (!tracing(__builtin_return_address(0))) {
        return real_clEnqueueNDRangeKernel(q, k, dim, offset, global, local, n_wait, wait, event);
    }
    bool timed;
    {
        GGPROF_GUARD;
        timed = launch_begin(&l, q, k);
    }
    if (!timed) return real_clEnqueueNDRangeKernel(q, k, dim, offset, global, local, n_wait, wait, event);
    ggcl_event own = NULL, *ev = event ? event : &own;
    uint64_t   h0  = ggprof_now_ns();
    ggcl_int   r   = real_clEnqueueNDRangeKernel(q, k, dim, offset, global, local, n_wait, wait, ev);
    uint64_t   h1  = ggprof_now_ns();
    if (r == GGCL_SUCCESS && *ev) {
        GGPROF_GUARD;
        launch_end(&l, *ev, event == NULL, h0, h1);
    }
    return r;
}

GGPROF_API ggcl_int clEnqueueTask(ggcl_command_queue q, ggcl_kernel k, ggcl_uint n_wait, const ggcl_event *wait,
                                  ggcl_event *event) {
    REAL(clEnqueueTask);
    launch l;
    if (!tracing(__builtin_return_address(0))) return real_clEnqueueTask(q, k, n_wait, wait, event);
    bool timed;
    {
        GGPROF_GUARD;
        timed = launch_begin(&l, q, k);
    }
    if (!timed) return real_clEnqueueTask(q, k, n_wait, wait, event);
    ggcl_event own = NULL, *ev = event ? event : &own;
    uint64_t   h0  = ggprof_now_ns();
    ggcl_int   r   = real_clEnqueueTask(q, k, n_wait, wait, ev);
    uint64_t   h1  = ggprof_now_ns();
    if (r == GGCL_SUCCESS && *ev) {
        GGPROF_GUARD;
        launch_end(&l, *ev, event == NULL, h0, h1);
    }
    return r;
}

/* ---- queue creation: profiling on ---- */

static ggcl_command_queue queue_created(ggcl_command_queue q) {
    if (q) {
        GGPROF_GUARD;
        pthread_mutex_lock(&g_lock);
        queue_register(q);
        pthread_mutex_unlock(&g_lock);
    }
    return q;
}

static void note_refused(ggcl_int err) {
    pthread_mutex_lock(&g_lock);
    bool first = !g_refused_noted;
    g_refused_noted = true;
    pthread_mutex_unlock(&g_lock);
    if (first) {
        ggprof_note("opencl: a device refused CL_QUEUE_PROFILING_ENABLE (error %d): its kernels are not timed", err);
    }
}

GGPROF_API ggcl_command_queue clCreateCommandQueue(ggcl_context ctx, ggcl_device_id dev,
                                                   ggcl_command_queue_properties props, ggcl_int *err) {
    REAL(clCreateCommandQueue);
    /* On-device queues are the device's own business (enqueued by kernels): left alone. */
    if (!tracing(__builtin_return_address(0)) || (props & GGCL_QUEUE_ON_DEVICE)) {
        return real_clCreateCommandQueue(ctx, dev, props, err);
    }
    ggcl_int e = GGCL_SUCCESS;
    ggcl_command_queue q = real_clCreateCommandQueue(ctx, dev, props | GGCL_QUEUE_PROFILING_ENABLE, &e);
    if (!q && !(props & GGCL_QUEUE_PROFILING_ENABLE)) {
        note_refused(e); /* the program gets exactly what it asked for */
        return real_clCreateCommandQueue(ctx, dev, props, err);
    }
    if (err) *err = e;
    return queue_created(q);
}

GGPROF_API ggcl_command_queue clCreateCommandQueueWithProperties(ggcl_context ctx, ggcl_device_id dev,
                                                                 const ggcl_queue_properties *props, ggcl_int *err) {
    REAL(clCreateCommandQueueWithProperties);
    if (!tracing(__builtin_return_address(0))) return real_clCreateCommandQueueWithProperties(ctx, dev, props, err);
    /* A copy of the program's (name, value) list, 0-terminated, with the profiling bit set or added. */
    enum { MAX_PROPS = 64 };
    ggcl_queue_properties with[MAX_PROPS + 3];
    int  n = 0;
    bool found = false, on_device = false, asked = false;
    while (props && props[n] != 0 && n + 2 <= MAX_PROPS) {
        with[n]     = props[n];
        with[n + 1] = props[n + 1];
        if (props[n] == GGCL_QUEUE_PROPERTIES) {
            found     = true;
            on_device = props[n + 1] & GGCL_QUEUE_ON_DEVICE;
            asked     = props[n + 1] & GGCL_QUEUE_PROFILING_ENABLE;
            with[n + 1] |= GGCL_QUEUE_PROFILING_ENABLE;
        }
        n += 2;
    }
    if ((props && props[n] != 0) || on_device) { /* longer than we copy, or an on-device queue: untouched */
        return real_clCreateCommandQueueWithProperties(ctx, dev, props, err);
    }
    if (!found) {
        with[n++] = GGCL_QUEUE_PROPERTIES;
        with[n++] = GGCL_QUEUE_PROFILING_ENABLE;
    }
    with[n] = 0;
    ggcl_int e = GGCL_SUCCESS;
    ggcl_command_queue q = real_clCreateCommandQueueWithProperties(ctx, dev, with, &e);
    if (!q && !asked) {
        note_refused(e);
        return real_clCreateCommandQueueWithProperties(ctx, dev, props, err);
    }
    if (err) *err = e;
    return queue_created(q);
}

/* ---- where the program waits: kernels have completed ---- */

static bool have_pending(void) {
    return atomic_load_explicit(&g_state, memory_order_acquire) > 0 &&
           atomic_load_explicit(&g_any_pending, memory_order_relaxed);
}

GGPROF_API ggcl_int clFinish(ggcl_command_queue q) {
    REAL(clFinish);
    ggcl_int r = real_clFinish(q);
    if (!ggprof_busy && have_pending()) {
        GGPROF_GUARD;
        harvest(false, true);
    }
    return r;
}

GGPROF_API ggcl_int clWaitForEvents(ggcl_uint n, const ggcl_event *events) {
    REAL(clWaitForEvents);
    ggcl_int r = real_clWaitForEvents(n, events);
    if (!ggprof_busy && have_pending()) {
        GGPROF_GUARD;
        harvest(false, true);
    }
    return r;
}

GGPROF_API ggcl_int clReleaseEvent(ggcl_event event) {
    REAL(clReleaseEvent);
    ggcl_int r = real_clReleaseEvent(event); /* ours keeps it alive until harvested */
    if (!ggprof_busy && have_pending()) {
        GGPROF_GUARD;
        harvest(false, false);
    }
    return r;
}

/* ---- exit: what completed, and how good the clocks were ---- */

static void at_exit(void) {
    if (atomic_load(&g_state) <= 0) return;
    GGPROF_GUARD;
    harvest(true, false);
    pthread_mutex_lock(&g_lock);
    for (int i = 0; i < g_n_devs; i++) {
        cl_device *d = &g_devs[i];
        if (d->method == CLOCK_TIMER || d->method == CLOCK_MARKER) calibrate(d);
        const ggprof_clock_map *c = &d->clock;
        /* One note of at most GGPROF_MAX_STR: the device name is cut to 32 characters. */
        ggprof_note("opencl: device %u (%.32s): %llu kernels; clock by %s +-%llu ns, %u calibrations, drift %.1f ppm "
                    "(+-%.1f), %u re-anchors (max step %lld ns); QUEUED outside enqueue by <= %llu ns",
                    d->ordinal, d->name, (unsigned long long) d->n_kernels, k_clock_names[d->method],
                    (unsigned long long) c->uncertainty, c->n_calibrations, ggprof_clock_drift_ppm(c),
                    ggprof_clock_drift_bound_ppm(c), c->n_reanchors, (long long) c->max_step_ns,
                    (unsigned long long) c->max_outside_ns);
        if (d->cal_queue && cl.release_queue) cl.release_queue(d->cal_queue);
        d->cal_queue = NULL;
    }
    uint64_t untimed = atomic_load(&g_untimed_queue);
    if (g_n_pending || g_failed || g_unprofiled || g_dropped || untimed) {
        ggprof_note("opencl: kernels not timed: %d not complete at exit, %llu failed, %llu without profiling info, "
                    "%llu over the pending limit, %llu on queues without profiling",
                    g_n_pending, (unsigned long long) g_failed, (unsigned long long) g_unprofiled,
                    (unsigned long long) g_dropped, (unsigned long long) untimed);
    }
    /* Later calls (other exit handlers, destructors) pass straight through: the summary above is final. */
    atomic_store(&g_state, -1);
    pthread_mutex_unlock(&g_lock);
}
