/* The collector's live aggregates (record --metrics): per process, backend and op, copies, device busy time, graph
 * latency per token and requests, summed from the ring's messages as the collector drains them. The workload pays
 * nothing for them: they are the collector's work, on its own thread, below the workload's priority. */
#ifndef GGPROF_LIVE_H
#define GGPROF_LIVE_H

#include <stddef.h>
#include <stdint.h>

#include "metrics_text.h"
#include "ring.h"

typedef struct ggprof_live ggprof_live;

ggprof_live *ggprof_live_new(void);
void         ggprof_live_free(ggprof_live *l);
/* A run of whole messages that one thread of process pid wrote (a drained chunk of its ring slot). Kinds it does not
 * know are skipped. Takes the lock. */
void ggprof_live_chunk(ggprof_live *l, int32_t pid, const void *bytes, size_t n);
/* After each drain: records whose node description came later in the drain get their op; requests idle for twice
 * GGPROF_REQUEST_IDLE_NS (schema/requests.h) at now_ns are ended. final: the workload is over, every request ends. */
void ggprof_live_settle(ggprof_live *l, uint64_t now_ns, int final);
/* Every aggregate in the exposition format (o->openmetrics chooses which); takes the lock. */
void ggprof_live_write(ggprof_live *l, ggprof_metrics_out *o);

#endif
