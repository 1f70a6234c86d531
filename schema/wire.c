/* Names that the wire enums stand for; readers and writers share them. */
#include "wire.h"

const char *const ggprof_sync_names[GGPROF_SYNC_COUNT] = {
    [GGPROF_SYNC_CPU_PLAN]    = "cpu_plan",
    [GGPROF_SYNC_CPU_KICKOFF] = "cpu_kickoff",
    [GGPROF_SYNC_CPU_BARRIER] = "cpu_barrier",
    [GGPROF_SYNC_CPU_JOIN]    = "cpu_join",
};

/* As the seed names copies; H2H is ours, for copies between two host buffers. */
const char *const ggprof_copy_names[4] = { "copy_H2D", "copy_D2H", "copy_D2D", "copy_H2H" };
