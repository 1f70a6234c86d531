/* llama.cpp's calls that the engine times as spans (engine/llama.c) and the analyzer reads back (the accounting):
 * their names and the depth they are stored at, defined here once. Each is a REGION record named by the function,
 * of depth GGPROF_LLAMA_REGION_DEPTH (a program's own regions have depths from 0). Includes nothing of ggprof's. */
#ifndef GGPROF_LLAMA_REGIONS_H
#define GGPROF_LLAMA_REGIONS_H

/* The regions table's depth of llama.cpp's spans; on the wire (ggprof_msg_region.depth, unsigned) UINT32_MAX. */
#define GGPROF_LLAMA_REGION_DEPTH (-1)

/* X(function) for each call of a kind: the function's name is the region's name. */
/* The model's load: what the accounting's "loading" measures. */
#define GGPROF_LLAMA_LOAD_CALLS(X) X(llama_model_load_from_file) X(llama_load_model_from_file) X(llama_model_load_from_splits)
/* The context's creation: "context_setup". */
#define GGPROF_LLAMA_CONTEXT_CALLS(X) X(llama_init_from_model) X(llama_new_context_with_model)
/* llama.cpp's own "load time" and "total time" start at the last reset and end with the last perf read. */
#define GGPROF_LLAMA_PERF_RESET_CALLS(X) X(llama_perf_context_reset)
#define GGPROF_LLAMA_PERF_CALLS(X)       X(llama_perf_context)

/* A list's names as a string array's initializer: GGPROF_LLAMA_NAMES(GGPROF_LLAMA_LOAD_CALLS) is
 * { "llama_model_load_from_file", ... } (what the accounting builds its queries from). */
#define GGPROF_LLAMA_NAME_(fn) #fn,
#define GGPROF_LLAMA_NAMES(calls) { calls(GGPROF_LLAMA_NAME_) }

#endif
