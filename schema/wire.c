/* Names that the wire enums stand for; readers and writers share them. */
#include "wire.h"

#include <string.h>

const char *const ggprof_sync_names[GGPROF_SYNC_COUNT] = {
    [GGPROF_SYNC_CPU_PLAN]    = "cpu_plan",
    [GGPROF_SYNC_CPU_KICKOFF] = "cpu_kickoff",
    [GGPROF_SYNC_CPU_BARRIER] = "cpu_barrier",
    [GGPROF_SYNC_CPU_JOIN]    = "cpu_join",
    [GGPROF_SYNC_BACKEND_WAIT] = "backend_wait",
};

/* As the upstream profiler names copies; H2H is ours, for copies between two host buffers. */
const char *const ggprof_copy_names[4] = { "copy_H2D", "copy_D2H", "copy_D2D", "copy_H2H" };

const char *const ggprof_place_reason_names[GGPROF_PLACE_COUNT] = {
    [GGPROF_PLACE_PREFERRED]       = "preferred",
    [GGPROF_PLACE_UNSUPPORTED]     = "unsupported",
    [GGPROF_PLACE_WEIGHTS_ON_HOST] = "weights_on_host",
    [GGPROF_PLACE_INPUTS_ON_HOST]  = "inputs_on_host",
    [GGPROF_PLACE_SCHEDULER]       = "scheduler",
};

void ggprof_cpu_ops_expand(const ggprof_msg_cpu_ops *m, void (*fn)(const ggprof_cpu_interval *iv, void *user),
                           void *user) {
    if (m->h.size < sizeof(*m) + (size_t) m->n_ops * sizeof(ggprof_cpu_op)) return;
    ggprof_cpu_interval iv;
    uint64_t prev = m->start_ns;
#define SYNC_TO(kind, end)                                                                                     \
    do {                                                                                                       \
        if ((end) > prev) {                                                                                    \
            memset(&iv, 0, sizeof(iv));                                                                        \
            iv.type = GGPROF_REC_SYNC, iv.sync = (kind), iv.node_index = -1, iv.fused_index = -1;              \
            iv.start_ns = prev, iv.duration_ns = (end) - prev;                                                 \
            fn(&iv, user);                                                                                     \
            prev = (end);                                                                                      \
        }                                                                                                      \
    } while (0)
    if (m->h.flags & GGPROF_CPU_OPS_FIRST) {
        if (m->plan_end_ns) SYNC_TO(GGPROF_SYNC_CPU_PLAN, m->plan_end_ns);
        if (m->kickoff_end_ns) SYNC_TO(GGPROF_SYNC_CPU_KICKOFF, m->kickoff_end_ns);
    }
    for (uint32_t i = 0; i < m->n_ops; i++) {
        const ggprof_cpu_op *op = &m->ops[i];
        iv.type          = GGPROF_REC_OP;
        iv.sync          = 0;
        iv.node_id       = op->node_id;
        iv.fused_node_id = op->fused_node_id;
        iv.node_index    = op->node_index;
        iv.fused_index   = op->fused_index;
        iv.start_ns      = prev;
        iv.duration_ns   = op->tick_ns > prev ? op->tick_ns - prev : 0;
        iv.wait_ns       = op->wait_ns;
        fn(&iv, user);
        if (op->tick_ns > prev) prev = op->tick_ns;
        SYNC_TO(GGPROF_SYNC_CPU_BARRIER, op->tick_ns + op->barrier_ns);
    }
    if (m->h.flags & GGPROF_CPU_OPS_LAST) SYNC_TO(GGPROF_SYNC_CPU_JOIN, m->end_ns);
#undef SYNC_TO
}
