/* The engine functions libggprof.so lends to libggprof-cupti.so, a library the CUDA driver loads on its own. */
#ifndef GGPROF_DEVICE_API_H
#define GGPROF_DEVICE_API_H

#include <stdbool.h>
#include <stdint.h>

#include "engine.h"

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
