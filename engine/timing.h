/* The timing mechanisms the engine calls around what it interposes, implemented above it in kernels/ (CPU ops:
 * kernels/cpu/cpu_ticks.c), which registers them here as a table of functions when libggprof.so loads: the engine
 * never names a symbol of a layer above it (tests/layering.sh checks the objects' symbols). */
#ifndef GGPROF_TIMING_H
#define GGPROF_TIMING_H

#include <stdbool.h>
#include <stdint.h>

#include "ggml_abi.h"
#include "wire.h"

/* The CPU timing's time-stamp counter (kernels/cpu/cpu_ticks.c says why), CLOCK_MONOTONIC where there is none. */
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
static inline uint64_t ggprof_stamp(void) { return __rdtsc(); }
#else
#include "clock_map.h"
static inline uint64_t ggprof_stamp(void) { return ggprof_now_ns(); }
#endif

/* Where a split's records belong. */
typedef struct {
    uint64_t graph_id;
    uint32_t sched_id;
    int32_t  split_id, backend_id, node_start;
    uint64_t start_ns, end_ns;
    /* ggprof_stamp() read just before and just after end_ns (0 and 0 where not read): the end's anchor comes from
     * that clock read when the two lie close, which after the compute is a cold one (vDSO and clock pages
     * evicted by the weights: hundreds to thousands of TSC cycles a read here). */
    uint64_t end_stamp_before, end_stamp_after;
} ggprof_split_place;

typedef void (*ggprof_set_abort_fn)(ggml_backend_t, ggml_abort_callback, void *);

/* The CPU backend's op timing. */
typedef struct {
    /* Keeps no split plans from now on (every split walked anew), with a note saying why (a format with one %s). */
    void (*plans_off)(const char *why_fmt, const char *arg);
    /* Installs the tick callback on a CPU backend (once), chaining whatever callback the program sets. */
    void (*hook_backend)(ggml_backend_t backend);
    /* The program's own abort-callback setter, wrapped: remembers its callback and keeps ours in front. */
    void (*set_abort_callback)(ggprof_set_abort_fn real, ggml_backend_t backend, ggml_abort_callback cb, void *data);
    /* Around one CPU graph compute on the calling thread (thread 0 of the compute). begin returns the number of
     * ticks expected; end emits the ops (CPU_OPS messages, after their plan's CPU_OPS_PLAN where the plan is new;
     * each also handed to on_chunk when given, with its ops' ids) when the ticks matched and returns 1, 0 when
     * they did not, -1 when no split was active. */
    int (*begin)(struct ggml_tensor **nodes, int n_nodes, struct ggml_tensor **graph_nodes, int graph_n_nodes);
    int (*end)(const ggprof_split_place *where, int *n_ticks, int *n_expected,
               void (*on_chunk)(const ggprof_msg_cpu_ops *m, const ggprof_cpu_op_id *ids, void *user), void *user);
    /* Hooks for the interposed CPU-library functions; each is a no-op outside an active CPU compute. */
    void (*barrier)(void (*real)(struct ggml_threadpool *), struct ggml_threadpool *tp);
    /* ggml_graph_compute's entry, with the threads its plan asks for (0 where unknown). */
    void (*graph_compute_entry)(int n_threads);
    void (*thread_start)(void);
    /* A backend is being freed (ggml_backend_free): what was kept for it goes, so that a backend made later at the
     * same address gets the tick installed anew, and the program's old callback is never called for it. */
    void (*backend_freed)(ggml_backend_t backend);
} ggprof_cpu_timing;

/* The CPU timing registered, NULL before (CPU ops are then not timed: the wrappers only forward). */
extern const ggprof_cpu_timing *_Atomic ggprof_cpu;
void ggprof_register_cpu_timing(const ggprof_cpu_timing *t);

#endif
