/* The schedulers the engine has seen and their backends: ids for the trace, which backend is the CPU. */
#ifndef GGPROF_SCHEDULERS_H
#define GGPROF_SCHEDULERS_H

#include <stdbool.h>
#include <stdint.h>

#include "engine.h"

struct ggprof_api_sched; /* api.c's, kept here opaque: the upstream profiler's C API state of a scheduler */

#define GGPROF_MAX_BACKENDS 16
typedef struct {
    ggml_backend_sched_t     sched; /* NULL for the backends used outside any scheduler */
    uint32_t                 id;
    int                      n;
    ggml_backend_t           backends[GGPROF_MAX_BACKENDS];
    bool                     is_cpu[GGPROF_MAX_BACKENDS];
    int                      dev_type[GGPROF_MAX_BACKENDS]; /* in ggml 0.23's numbering (schedulers.c) */
    struct ggprof_api_sched *api;   /* the upstream profiler's C API, when the program uses it on this scheduler */
    bool                     iface_hooked; /* its backends' tables hooked (ggml inside the program) */
} ggprof_sched;

/* Registers a scheduler (its backends are described in the trace); *old_api gets the C API state of an entry it
 * replaces, for the caller to free. NULL when the table is full. */
ggprof_sched *ggprof_sched_register(ggml_backend_sched_t sched, struct ggprof_api_sched **old_api);
/* The entry of a scheduler, registered on first sight when create. */
ggprof_sched *ggprof_sched_find(ggml_backend_sched_t sched, bool create);
/* Forgets a freed scheduler; returns its C API state, for the caller to free. */
struct ggprof_api_sched *ggprof_sched_forget(ggml_backend_sched_t sched);
/* The entry of the backends computed outside any scheduler (sched_id 0), with backend added if new. */
ggprof_sched *ggprof_sched_unscheduled(ggml_backend_t backend);
/* The index of backend b in se, or -1. */
int ggprof_sched_backend_index(const ggprof_sched *se, ggml_backend_t b);
/* Which scheduler's backend b is: hint's if it has it, else the one found last, else the first that has it.
 * Returns its index (-1: none) with the scheduler's id and whether b computes on the host (CPU, ACCEL). */
int ggprof_sched_locate(ggml_backend_t b, const ggprof_sched *hint, uint32_t *sched_id, bool *host);

/* The scheduler's C API state slot (api.c's), the scheduler registered if new; NULL if it cannot be tracked. */
struct ggprof_api_sched **ggprof_sched_api_slot(ggml_backend_sched_t sched);

#endif
