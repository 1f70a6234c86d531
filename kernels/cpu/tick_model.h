/* Which nodes of a CPU split thread 0 ticks after: the CPU backend's rules, as they changed between ggml releases. */
#ifndef GGPROF_TICK_MODEL_H
#define GGPROF_TICK_MODEL_H

#include <stdbool.h>
#include <stdint.h>

#include "ggml_abi.h"

/* Use counts of the graph's RMS_NORM nodes, built when a split of the graph is walked: the CPU fuses
 * RMS_NORM+MUL only when the norm has exactly one use, and ggml keeps those counts in a private part of the
 * graph. Kept while the graph has the same nodes (llama.cpp reuses its graph from token to token, and rebuilding
 * the counts reads every node's sources, cold, each time). A graph rebuilt in place with other sources would make
 * the fusion model wrong for one walk at worst: its ticks would not match, and the split is marked instead of
 * given wrong times. */
typedef struct {
    bool     built;
    uint64_t graph_key; /* the graph the counts were built for: its node pointers, in order */
    int      n, cap;
    const struct ggml_tensor **keys;
    int32_t *counts;
} ggprof_use_counts;

/* One release family's rules. Every model was read from the ggml-cpu.c of the releases it names and checked
 * against their prebuilt libraries (docs/compatibility.md). */
typedef struct {
    const char *name;            /* how notes and the trace name it */
    bool        skip_empty;      /* NONE, RESHAPE, VIEW, PERMUTE, TRANSPOSE do not tick (ggml_op_is_empty) */
    bool        skip_uncomputed; /* nodes without GGML_TENSOR_FLAG_COMPUTE do not tick */
    bool        fuse_rms_mul;    /* RMS_NORM followed by its MUL is one node (ggml_cpu_try_fuse_ops) */
} ggprof_tick_model;

extern const ggprof_tick_model ggprof_tick_models[];
extern const int               ggprof_n_tick_models;
#define GGPROF_TICK_MODELS_MAX 8

/* What the rules need from the ggml in hand: op ids learned from probe graphs, and the environment. */
typedef struct {
    int32_t none, reshape, view, permute, transpose, rms_norm, mul;
    size_t  links_off;        /* where a tensor's sources lie (ggml_abi.h) */
    bool    has_compute_flag; /* this ggml flags the nodes to compute */
    bool    fusion_disabled;  /* GGML_CPU_DISABLE_FUSION=1 */
} ggprof_tick_env;

/* Whether model m can describe this ggml at all (a model that skips uncomputed nodes needs the flag). */
bool ggprof_tick_model_applies(const ggprof_tick_model *m, const ggprof_tick_env *env);

/* One tick: the split's node computed before it, and the node fused into it (-1 if none). */
typedef struct {
    int32_t node, fused;
} ggprof_tick;

/* The ticks of a split (nodes, inside its graph's graph_nodes) under model m: fills ticks (room for n) when
 * not NULL and returns how many; *hash (when not NULL) identifies the sequence, so that two models whose counts
 * agree can be told apart. */
int ggprof_tick_walk(const ggprof_tick_model *m, const ggprof_tick_env *env, struct ggml_tensor **nodes, int n,
                     struct ggml_tensor **graph_nodes, int graph_n, ggprof_use_counts *uc, ggprof_tick *ticks,
                     uint64_t *hash);

/* The first node of the split where models a and b decide differently (a tick, no tick, or fused), or -1. */
int ggprof_tick_models_part(const ggprof_tick_model *a, const ggprof_tick_model *b, const ggprof_tick_env *env,
                            struct ggml_tensor **nodes, int n, struct ggml_tensor **graph_nodes, int graph_n,
                            ggprof_use_counts *uc);

void ggprof_use_counts_free(ggprof_use_counts *uc);

#endif
