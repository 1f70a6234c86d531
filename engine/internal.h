/* What the engine's own files share, and nothing outside engine/ needs (kernels/ use engine.h). In the order of the
 * layers (engine/README.md): a file calls only the files listed before its own (tests/layering.sh checks it). */
#ifndef GGPROF_ENGINE_INTERNAL_H
#define GGPROF_ENGINE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine.h"
#include "ring.h"

/* ---- sink.c: the bottom. The ring stays behind these functions. ---- */

/* Sets the sink up once (attaches GGPROF_RING, or starts GGML_PROFILE's collector); true when records can go. */
bool ggprof_sink_ready(void);
/* Whether the sink was set up with a ring (a collector records); whether a ring exists at all: engine.h. */
bool ggprof_sink_attached(void);
/* The ring's recording word (GGPROF_REC_ON records, ring.h), 0 without a ring. */
uint32_t ggprof_sink_recording(void);
/* The program's own switch (ggprof_pause, ggprof_resume), kept in the ring; nothing without one. */
void ggprof_sink_program_switch(bool on);
/* Creates the ring the sink writes into (GGML_PROFILE: profile.c); ggprof_ring_create's result. */
int ggprof_sink_create(const char *path, uint32_t n_slots, uint64_t slot_cap, uint32_t level);
/* Sends the process message now (once ggml is found: its version and library filled in). */
void ggprof_sink_describe_process(void);
/* 1 when the program and the collector both record now (GGPROF_REC_ON), or no collector is attached. */
int ggprof_recording_now(void);
/* The scheduler graph this thread computes: 1 recorded, 0 not (outside a capture window, or paused, when it
 * began), -1 none. ggprof_emit keeps or drops the graph's messages by it. */
extern __thread int ggprof_t_graph_on;

/* Hooks the files above register with the sink at load (a constructor(101), as kernels/cpu registers its timing):
 * run in a forked child (in the order registered), and the start of GGML_PROFILE's own collector (the sink calls it
 * when GGML_PROFILE is set and no GGPROF_RING: 0 with the ring created, else -1 and why). */
void ggprof_sink_on_fork(void (*hook)(void));
void ggprof_sink_set_profile_start(int (*start)(const char *profile, char *why, size_t why_len));

/* The ggml the engine will find: an address inside the object that holds it (the first given wins: reach.c's, for
 * ggml inside a program, before any wrapper runs; else the first wrapper's real function). */
void        ggprof_engine_set_ggml(const void *fn_in_ggml);
const void *ggprof_engine_ggml(void);

/* A wrapped call changed a graph's nodes (ggprof_graph_gen, engine.h). Any change of value will do, so a bump is a
 * plain load and store. */
static inline void ggprof_graph_changed(void) {
    atomic_store_explicit(&ggprof_graph_gen, atomic_load_explicit(&ggprof_graph_gen, memory_order_relaxed) + 1,
                          memory_order_release);
}

/* ---- resolve.c ---- */

/* The loaded object that holds addr: its file (the executable's through /proc/self/exe) and load bias. */
bool ggprof_object_of(const void *addr, char *path, size_t path_len, uintptr_t *bias, bool *is_main);

/* ---- reach.c (reach.h) ---- */

/* Once ggml is found, patches what a library with ggml inside calls directly (a Node addon loaded after start),
 * decides whether split plans can be kept, and notes how ggml is reached. */
void ggprof_reach_after_find(const ggprof_ggml *g);

/* ---- probe.c ---- */

/* Finds the ggml library that holds fn_in_ggml and checks it (functions, tensor layout, op ids); false with a note
 * when profiling must stay off. */
bool ggprof_ggml_find(ggprof_ggml *g, const void *fn_in_ggml);

/* Whether a backend computes node t of a graph: ggml skips the empty ops (NONE, RESHAPE, VIEW, PERMUTE,
 * TRANSPOSE) and, in the releases that flag them, the nodes not flagged for compute. */
static inline bool ggprof_node_computed(const ggprof_ggml *g, const struct ggml_tensor *t) {
    return !(t->op == g->op.none || t->op == g->op.reshape || t->op == g->op.view || t->op == g->op.permute ||
             t->op == g->op.transpose || (g->has_compute_flag && !(t->flags & GGML_ABI_FLAG_COMPUTE)));
}

/* ---- describe.c ---- */

uint32_t ggprof_node_id(const struct ggml_tensor *t);      /* describes a node once, returns its id */
uint32_t ggprof_copy_node_id(const struct ggml_tensor *t); /* the upstream profiler's COPY description of a tensor */
/* Keep every description from now on (the upstream profiler's C API reads them back), describing again those sent before; and
 * one kept, by id. */
void                   ggprof_desc_keep(void);
const ggprof_msg_node *ggprof_node_desc(uint32_t id);

/* ---- setup.c: finds ggml (probe.c), turns recording on, says how ggml is reached (reach.c) ---- */

/* Called by every wrapper with the real function it resolved; sets the engine up on first use.
 * Returns true when the engine records (level permitting). */
bool ggprof_engine_ready(const void *real_fn_in_ggml_base);
/* The same set-up, once, for the upstream profiler's C API (api.c), which turns the engine on itself. */
void ggprof_engine_setup(void);

/* ---- the wrappers ---- */

/* profile.c: GGML_PROFILE: a scheduler that computed graphs was freed, or a graph was recorded. */
void ggprof_profile_sched_freed(void);
void ggprof_profile_graph_recorded(void);

/* llama.c and memory.c: the wrappers whose functions may be patched where ggml (llama.cpp) is inside the program
 * (reach.h); interpose.c hands reach.c its own list and these. The llama_decode call this thread is in (llama.c),
 * 0 outside one: graphs computed in it name it. */
struct ggprof_entry_s;
const struct ggprof_entry_s *ggprof_llama_entries(int *n);
const struct ggprof_entry_s *ggprof_memory_entries(int *n);
extern __thread uint32_t ggprof_t_batch;

/* memory.c: the devices' memory after the first scheduler graph, and at the end (the first scheduler freed, or exit). */
void ggprof_memory_after_graph(void);
void ggprof_memory_at_end(void);
/* placement.c: after a recorded scheduler graph, which backend each node ran on and why, when its plan is new. */
void ggprof_placement_after_graph(ggml_backend_sched_t sched, struct ggml_cgraph *graph, uint64_t graph_id);

#endif
