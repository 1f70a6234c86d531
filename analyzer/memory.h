/* Memory of a trace (docs/memory.md): what each process holds per backend and kind over time and at its peak, each
 * compute buffer's peak and the tensors alive there, weights and KV cache per layer. One computation for every view
 * that shows it: `memory`, `report`, `diff`, the HTML memory track and the Chrome trace's counters. */
#ifndef GGPROF_MEMORY_H
#define GGPROF_MEMORY_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

/* The kinds of memory, as the trace database's buffers view tells them. */
enum { GGPROF_MEM_WEIGHTS, GGPROF_MEM_KV, GGPROF_MEM_COMPUTE, GGPROF_MEM_OTHER, GGPROF_MEM_KINDS };
extern const char *const ggprof_mem_kind_names[GGPROF_MEM_KINDS];

typedef struct {
    int32_t pid;
    int64_t id, size, alloc_ns, free_ns; /* free_ns -1: held to the end */
    int     kind, is_host;
    char    name[64], device[64];        /* buffer type (CPU_Mapped, Vulkan0...), device ("" none) */
} ggprof_mbuf;

/* One backend (buffer type) of a process: bytes of each kind held at the process's peak, and the most it held. */
typedef struct {
    int32_t pid;
    char    name[64], device[64];
    int64_t at_peak[GGPROF_MEM_KINDS], max_held, held; /* held: scratch while walking the timeline */
} ggprof_mbackend;

/* A process's peak: the moment its buffers added up to the most. */
typedef struct {
    int32_t pid;
    int64_t peak_bytes, peak_ns;
} ggprof_mproc;

/* A change of what is held: a buffer allocated (+) or freed (-), in time order. */
typedef struct {
    int64_t t_ns, delta, held_backend, held_process;
    const ggprof_mbuf *buf;
} ggprof_mevent;

typedef struct {
    int32_t node_index, layer;
    char    op[32], tensor[64], ne[64];
    int64_t size, offset;
} ggprof_mlive;

/* A compute buffer's peak in the plan that asked it for the most: the step (node) where the tensors alive reach
 * furthest into it, and those tensors. extent = padded live bytes + holes between them. */
typedef struct {
    const ggprof_mbuf *buf;
    int64_t  plan_id, extent, live_bytes, padding, holes;
    int32_t  sched_id, step, n_nodes; /* step -1: before the first node (leafs and inputs only) */
    char     step_op[32], step_tensor[64];
    ggprof_mlive *live;
    size_t   n_live;
} ggprof_mpeak;

/* Weights or KV cache of one layer (-1: none) and type on one backend, from the tensors graphs read or write. */
typedef struct {
    int32_t pid, layer, kind;
    char    backend[64], type[16];
    int64_t bytes, n;
} ggprof_mlayer;

typedef struct {
    int32_t pid;
    char    device[64], moment[16];
    int64_t t_ns, free, total;
} ggprof_mdev;

typedef struct {
    int              present; /* the trace records memory (schema 4 and a recorded buffer) */
    int64_t          t0;      /* the trace's start, for times */
    ggprof_mbuf     *bufs;
    size_t           n_bufs;
    ggprof_mbackend *backends;
    size_t           n_backends;
    ggprof_mproc    *procs;
    size_t           n_procs;
    ggprof_mevent   *events;
    size_t           n_events;
    ggprof_mpeak    *peaks;
    size_t           n_peaks;
    ggprof_mlayer   *layers;
    size_t           n_layers;
    ggprof_mdev     *devs;
    size_t           n_devs;
} ggprof_mem;

/* Loads and computes everything above. Returns 0 (m->present 0 for a trace without memory), -1 with a reason. */
int  ggprof_mem_load(sqlite3 *db, ggprof_mem *m, char *why, size_t why_len);
void ggprof_mem_free(ggprof_mem *m);

#include <stdio.h>
#include "output.h"
/* One row per process and backend: each kind held at the process's peak, the most the backend held (initializes t). */
void ggprof_mem_backends_table(ggprof_table *t, const ggprof_mem *m);
/* Each process's peak, each compute buffer's peak, the devices' memory: lines for `memory` and `report`. */
void ggprof_mem_print_summary(FILE *out, const ggprof_mem *m, const char *indent);

#define GGPROF_MIB(b) ((double) (b) / (1024.0 * 1024.0))

#endif
