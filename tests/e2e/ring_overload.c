/* Graphs of many tiny ops computed back to back on the CPU backend, one thread: far more records than a small ring
 * and a collector that sleeps between drains can take. tests/e2e/ring_overload.sh checks that the trace says
 * exactly how many records, and which graphs, were lost. Usage: ring_overload N_OPS N_GRAPHS */
#include <stdio.h>
#include <stdlib.h>

#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "ggml.h"

int main(int argc, char **argv) {
    int n_ops = argc > 1 ? atoi(argv[1]) : 2000, n_graphs = argc > 2 ? atoi(argv[2]) : 200;
    if (n_ops < 1 || n_graphs < 1) return fprintf(stderr, "usage: ring_overload N_OPS N_GRAPHS\n"), 2;
    ggml_backend_t cpu = ggml_backend_cpu_init();
    if (!cpu) return fprintf(stderr, "ring_overload: no CPU backend\n"), 1;
    ggml_backend_cpu_set_n_threads(cpu, 1); /* no barriers: each graph makes the same records */
    size_t graph_size = (size_t) n_ops + 16;
    ggml_backend_sched_t sched = ggml_backend_sched_new(&cpu, NULL, 1, graph_size, false, true);
    struct ggml_init_params ip = { (graph_size + 4) * ggml_tensor_overhead() + ggml_graph_overhead_custom(graph_size, false),
                                   NULL, true };
    struct ggml_context *ctx = ggml_init(ip);
    struct ggml_tensor *x = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 16);
    ggml_set_input(x);
    struct ggml_tensor *y = x;
    for (int i = 0; i < n_ops; i++) y = ggml_scale(ctx, y, 1.0f);
    ggml_set_output(y);
    struct ggml_cgraph *gf = ggml_new_graph_custom(ctx, graph_size, false);
    ggml_build_forward_expand(gf, y);
    if (!ggml_backend_sched_alloc_graph(sched, gf)) return fprintf(stderr, "ring_overload: cannot allocate\n"), 1;
    float data[16] = { 1 };
    for (int g = 0; g < n_graphs; g++) {
        ggml_backend_tensor_set(x, data, 0, sizeof(data));
        if (ggml_backend_sched_graph_compute(sched, gf) != GGML_STATUS_SUCCESS) return 1;
    }
    printf("nodes %d graphs %d\n", ggml_graph_n_nodes(gf), n_graphs);
    ggml_backend_sched_free(sched);
    ggml_free(ctx);
    ggml_backend_free(cpu);
    return 0;
}
