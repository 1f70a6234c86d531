/* ggprof's own C API, for what the upstream profiler's API lacks: control of `ggprof record` from inside
 * the program and named regions on its timeline. Link with -lggprof (or preload libggprof.so). */
#ifndef GGPROF_H
#define GGPROF_H

#ifdef __cplusplus
extern "C" {
#endif

/* Stops and restarts recording of graphs, splits and records under `ggprof record` (or GGML_PROFILE),
 * e.g. to skip warm-up. Descriptions and backends are always kept. */
void ggprof_pause(void);
void ggprof_resume(void);
/* 1 when a collector is attached and recording, 0 otherwise. */
int  ggprof_recording(void);
/* Names a stretch of the calling thread's time ("prompt", "token 12"); regions nest. They are stored in the
 * trace's `regions` view. */
void ggprof_region_begin(const char *name);
void ggprof_region_end(void);

#ifdef __cplusplus
}
#endif

#endif
