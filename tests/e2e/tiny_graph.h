/* tiny_graph.h: the graph the record-rate programs compute (e2e/ring_overload.c, bench/rate_workload.c,
 * bench/node_cost.c): a chain of N tiny ops on 16 floats, allocated through a scheduler on one CPU backend, so that
 * the records come as fast as ggml computes. Header-only: each program is built alone by its script. */
#ifndef GGPROF_TESTS_TINY_GRAPH_H
#define GGPROF_TESTS_TINY_GRAPH_H

#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml.h"

typedef struct {
    ggml_backend_sched_t sched;
    struct ggml_context *ctx;
    struct ggml_cgraph  *gf;
    struct ggml_tensor  *x; /* the input, 16 floats */
} tiny_graph;

/* n_ops SCALE nodes (add: ADD nodes, each reading x again) on cpu. 0, or -1 when the graph cannot be allocated. */
static inline int tiny_graph_make(tiny_graph *t, ggml_backend_t cpu, int n_ops, int add) {
    size_t graph_size = (size_t) n_ops + 16;
    t->sched = ggml_backend_sched_new(&cpu, NULL, 1, graph_size, false, true);
    struct ggml_init_params ip = { (graph_size + 4) * ggml_tensor_overhead() + ggml_graph_overhead_custom(graph_size, false),
                                   NULL, true };
    t->ctx = ggml_init(ip);
    t->x   = ggml_new_tensor_1d(t->ctx, GGML_TYPE_F32, 16);
    ggml_set_input(t->x);
    struct ggml_tensor *y = t->x;
    for (int i = 0; i < n_ops; i++) y = add ? ggml_add(t->ctx, y, t->x) : ggml_scale(t->ctx, y, 1.0f);
    ggml_set_output(y);
    t->gf = ggml_new_graph_custom(t->ctx, graph_size, false);
    ggml_build_forward_expand(t->gf, y);
    return ggml_backend_sched_alloc_graph(t->sched, t->gf) ? 0 : -1;
}

#endif
