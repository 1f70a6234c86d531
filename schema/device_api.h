/* The engine functions libggprof.so lends to the libraries a device runtime loads on its own (libggprof-cupti.so,
 * the Vulkan layer), and the one export macro of every ggprof library. */
#ifndef GGPROF_DEVICE_API_H
#define GGPROF_DEVICE_API_H

#include <stdbool.h>
#include <stdint.h>

#include "wire.h"

/* Everything else in ggprof's libraries is hidden (-fvisibility=hidden). */
#define GGPROF_API __attribute__((visibility("default")))

/* Where the calling thread is: inside which graph and split compute, if any. */
typedef struct {
    uint64_t graph_id; /* GGPROF_GRAPH_NONE outside a graph */
    uint32_t sched_id;
    int32_t  split_id, backend_id, node_start, n_nodes;
    /* On a device backend's split, the node its library is recording now (-1, 0: not known): ggml-vulkan, for
     * one, calls ggml_is_empty(node) first thing for each node it records (interpose.c). */
    int32_t  node_index;
    uint32_t node_id;
} ggprof_place;

/* libggprof.so is built with hidden visibility, and the CUPTI library is loaded by the driver
 * (CUDA_INJECTION64_PATH), not linked against it: it finds this table by name with dlsym(RTLD_DEFAULT). A
 * process without libggprof.so (the variable inherited by a program started outside `ggprof record`) finds
 * nothing and the CUPTI library stays idle. `size` lets a newer table grow at its end. */
typedef struct {
    uint32_t version, size;
    bool (*ready)(void);                  /* ggprof_device_ready */
    bool (*place)(ggprof_place *out);     /* ggprof_current_place */
    int (*emit)(const ggprof_msg_hdr *m); /* ggprof_emit */
    void (*note)(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
} ggprof_device_api;

#define GGPROF_DEVICE_API_VERSION 1
#define GGPROF_DEVICE_API_SYMBOL  "ggprof_device_api_v1"
typedef const ggprof_device_api *(*ggprof_device_api_fn)(void);

/* The CUPTI library, beside libggprof.so. */
#define GGPROF_CUPTI_LIB_NAME "libggprof-cupti.so"

#endif
