/* Between the interposed scheduler and the upstream profiler's C API: per-scheduler in-process records. */
#ifndef GGPROF_API_H
#define GGPROF_API_H

#include <stdbool.h>

#include "ggml_abi.h"
#include "wire.h"

typedef struct ggprof_api_sched ggprof_api_sched;

bool ggprof_api_enabled(const ggprof_api_sched *a);
/* A CPU split's ops, and an OP or COPY event, for a scheduler whose profiling the program turned on. */
void ggprof_api_cpu_chunk(const ggprof_msg_cpu_ops *m, const ggprof_cpu_op_id *ids, void *api);
void ggprof_api_event(ggprof_api_sched *a, const ggprof_msg_event *e);
void ggprof_api_free(ggprof_api_sched *a);

#endif
