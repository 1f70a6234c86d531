/* The engine's set-up: on the first call of any wrapper (or of the upstream profiler's C API), finds ggml and checks it (probe.c),
 * turns recording on when a sink is attached (sink.c), and says how ggml is reached (reach.c). It decides and calls
 * down; the wrappers above call it. */
#include <pthread.h>
#include <stdlib.h>

#include "internal.h"

static pthread_once_t g_init_once = PTHREAD_ONCE_INIT;

/* Finds ggml and checks it whether or not a sink exists: the upstream profiler's C API may turn profiling on later. */
static void engine_init(void) {
    bool sink = ggprof_sink_ready();
    GGPROF_GUARD;
    ggprof_ggml *g = &ggprof_eng.g;
    if (!ggprof_ggml_find(g, ggprof_engine_ggml())) {
        ggprof_eng.broken = true;
        return;
    }
    const char *fusion = getenv("GGML_CPU_DISABLE_FUSION"); /* read as ggml-cpu.c reads it */
    ggprof_eng.cpu_fusion = !(fusion && atoi(fusion) == 1);
    g->ok              = true;
    ggprof_eng.enabled = sink;
    if (sink) ggprof_sink_describe_process();
    ggprof_reach_after_find(g);
}

void ggprof_engine_setup(void) { pthread_once(&g_init_once, engine_init); }

bool ggprof_engine_ready(const void *real_fn_in_ggml_base) {
    if (ggprof_eng.broken) return false;
    ggprof_engine_set_ggml(real_fn_in_ggml_base);
    pthread_once(&g_init_once, engine_init);
    return ggprof_eng.enabled && !ggprof_busy;
}
