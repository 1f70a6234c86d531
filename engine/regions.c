/* ggprof's own API for programs (include/ggprof.h): pause and resume recording, named regions. */
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "ggprof.h"

GGPROF_API void ggprof_pause(void) {
    ggprof_sink_program_switch(false);
}

GGPROF_API void ggprof_resume(void) {
    ggprof_sink_program_switch(true);
}

GGPROF_API int ggprof_recording(void) {
    return ggprof_sink_has_ring() && ggprof_sink_recording() == GGPROF_REC_ON ? 1 : 0;
}

#define MAX_REGION_DEPTH 32
static __thread struct {
    uint64_t start_ns;
    char     name[GGPROF_MAX_NAME];
} t_regions[MAX_REGION_DEPTH];
static __thread int t_region_depth;

GGPROF_API void ggprof_region_begin(const char *name) {
    if (t_region_depth < MAX_REGION_DEPTH) {
        snprintf(t_regions[t_region_depth].name, GGPROF_MAX_NAME, "%s", name ? name : "");
        t_regions[t_region_depth].start_ns = ggprof_now_ns();
    }
    t_region_depth++;
}

GGPROF_API void ggprof_region_end(void) {
    if (t_region_depth == 0) return;
    int d = --t_region_depth;
    if (d >= MAX_REGION_DEPTH || !ggprof_device_ready()) return;
    ggprof_msg_region m;
    memset(&m, 0, sizeof(m));
    m.h        = (ggprof_msg_hdr){ sizeof(m), GGPROF_MSG_REGION, 0 };
    m.start_ns = t_regions[d].start_ns;
    m.end_ns   = ggprof_now_ns();
    m.depth    = (uint32_t) d;
    memcpy(m.name, t_regions[d].name, sizeof(m.name));
    ggprof_emit(&m.h);
}

