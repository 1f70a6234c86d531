/* Graphs of many tiny ops computed back to back on the CPU backend, one thread: far more records than a small ring
 * and a collector that sleeps between drains can take. tests/e2e/ring_overload.sh checks that the trace says
 * exactly how many records, and which graphs, were lost. Usage: ring_overload N_OPS N_GRAPHS */
#include <stdio.h>
#include <stdlib.h>

#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "ggml.h"

#include "tiny_graph.h"

int main(int argc, char **argv) {
    int n_ops = argc > 1 ? atoi(argv[1]) : 2000, n_graphs = argc > 2 ? atoi(argv[2]) : 200;
    if (n_ops < 1 || n_graphs < 1) return fprintf(stderr, "usage: ring_overload N_OPS N_GRAPHS\n"), 2;
    ggml_backend_t cpu = ggml_backend_cpu_init();
    if (!cpu) return fprintf(stderr, "ring_overload: no CPU backend\n"), 1;
    ggml_backend_cpu_set_n_threads(cpu, 1); /* no barriers: each graph makes the same records */
    tiny_graph t;
    if (tiny_graph_make(&t, cpu, n_ops, 0) != 0) return fprintf(stderr, "ring_overload: cannot allocate\n"), 1;
    ggml_backend_sched_t sched = t.sched;
    struct ggml_cgraph *gf = t.gf;
    struct ggml_tensor *x = t.x;
    float data[16] = { 1 };
    for (int g = 0; g < n_graphs; g++) {
        ggml_backend_tensor_set(x, data, 0, sizeof(data));
        if (ggml_backend_sched_graph_compute(sched, gf) != GGML_STATUS_SUCCESS) return 1;
    }
    printf("nodes %d graphs %d\n", ggml_graph_n_nodes(gf), n_graphs);
    ggml_backend_sched_free(sched);
    ggml_free(t.ctx);
    ggml_backend_free(cpu);
    return 0;
}
