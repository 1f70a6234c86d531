/* What the engine's own files share, and nothing outside engine/ needs (kernels/ use engine.h). */
#ifndef GGPROF_ENGINE_INTERNAL_H
#define GGPROF_ENGINE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "engine.h"
#include "ring.h"

/* engine.c: the ring this process writes into (file NULL when none is attached). */
ggprof_ring *ggprof_sink_ring(void);

/* describe.c: forget the descriptions sent so far, in a forked child (its trace is its own); and keep every
 * description from now on (the seed's C API reads them back), describing again those sent before. */
void ggprof_desc_after_fork(void);
void ggprof_desc_keep(void);

/* probe.c: finds the ggml library that holds fn_in_ggml and checks it (functions, tensor layout, op ids);
 * false with a note when profiling must stay off. */
bool ggprof_ggml_find(ggprof_ggml *g, const void *fn_in_ggml);

/* interpose.c and llama.c: the wrappers whose functions may be patched where ggml (llama.cpp) is inside the
 * program (reach.h); interpose.c's list holds both. */
struct ggprof_entry_s;
const struct ggprof_entry_s *ggprof_interpose_entries(int *n);
const struct ggprof_entry_s *ggprof_llama_entries(int *n);
const struct ggprof_entry_s *ggprof_memory_entries(int *n);

/* memory.c: the devices' memory after the first scheduler graph, and at the end (the first scheduler freed, or exit). */
void ggprof_memory_after_graph(void);
void ggprof_memory_at_end(void);
/* ggml was found inside a library loaded after start (lib: its file name): if no buffer was seen by the first graph,
 * the trace says memory is off there. */
void ggprof_memory_found_late(const char *lib);

/* placement.c: after a recorded scheduler graph, which backend each node ran on and why, when its plan is new. */
void ggprof_placement_after_graph(ggml_backend_sched_t sched, struct ggml_cgraph *graph, uint64_t graph_id);

/* reach.c: once ggml is found, patches what a library with ggml inside calls directly (a Node addon loaded after
 * start), decides whether split plans can be kept, and notes how ggml is reached. */
void ggprof_reach_after_find(const ggprof_ggml *g);

/* profile.c: GGML_PROFILE without `ggprof record`: creates the ring and starts a collector for it (0), and
 * writes the profile at exit; in a forked child, leaves the profile to the parent. */
int  ggprof_profile_start(const char *profile, char *why, size_t why_len);
void ggprof_profile_after_fork(void);

#endif
