/* The per-node cost benchmark's workload (tests/bench/node_cost.sh): a graph of N_OPS tiny ADD nodes (16 floats
 * each, about 100 ns in ggml itself) computed N_GRAPHS times through a scheduler on the CPU backend with THREADS
 * threads. Prints "ns_per_node X": the median over the graphs of a graph compute's wall time (CLOCK_MONOTONIC
 * around ggml_backend_sched_graph_compute) divided by its node count. The first tenth of the graphs warm up and
 * are left out. Usage: node_cost N_OPS N_GRAPHS THREADS
 * Built with -DNODE_COST_LOAD, it takes the CPU backend from the library $NODE_COST_CPU_LIB instead (ggml_backend_load:
 * node-llama-cpp's prebuilt libggml-cpu-haswell.so, whose instructions valgrind knows, for callgrind's counts). */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "ggml.h"

#include "../e2e/tiny_graph.h"

static double now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec * 1e9 + (double) ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *) a, y = *(const double *) b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    int n_ops = argc > 1 ? atoi(argv[1]) : 2000, n_graphs = argc > 2 ? atoi(argv[2]) : 200;
    int threads = argc > 3 ? atoi(argv[3]) : 1;
    if (n_ops < 1 || n_graphs < 10 || threads < 1) return fprintf(stderr, "usage: node_cost N_OPS N_GRAPHS THREADS\n"), 2;
#ifdef NODE_COST_LOAD
    const char *lib = getenv("NODE_COST_CPU_LIB");
    ggml_backend_reg_t reg = lib ? ggml_backend_load(lib) : NULL;
    if (!reg) return fprintf(stderr, "node_cost: cannot load the CPU backend '%s'\n", lib ? lib : "(NODE_COST_CPU_LIB)"), 1;
    ggml_backend_t cpu = ggml_backend_dev_init(ggml_backend_reg_dev_get(reg, 0), NULL);
    ggml_backend_set_n_threads_t set_threads =
        (ggml_backend_set_n_threads_t) ggml_backend_reg_get_proc_address(reg, "ggml_backend_set_n_threads");
    if (!cpu || !set_threads) return fprintf(stderr, "node_cost: no CPU backend in '%s'\n", lib), 1;
    set_threads(cpu, threads);
#else
    ggml_backend_t cpu = ggml_backend_cpu_init();
    if (!cpu) return fprintf(stderr, "node_cost: no CPU backend\n"), 1;
    ggml_backend_cpu_set_n_threads(cpu, threads);
#endif
    tiny_graph t;
    if (tiny_graph_make(&t, cpu, n_ops, 1) != 0) return fprintf(stderr, "node_cost: cannot allocate\n"), 1;
    ggml_backend_sched_t sched = t.sched;
    struct ggml_cgraph *gf = t.gf;
    struct ggml_tensor *x = t.x;
    float data[16] = { 1 };
    double *per_node = malloc(sizeof(double) * (size_t) n_graphs);
    int warm = n_graphs / 10, n = 0;
    for (int g = 0; g < n_graphs; g++) {
        ggml_backend_tensor_set(x, data, 0, sizeof(data));
        double t0 = now_ns();
        if (ggml_backend_sched_graph_compute(sched, gf) != GGML_STATUS_SUCCESS) return 1;
        double t1 = now_ns();
        if (g >= warm) per_node[n++] = (t1 - t0) / ggml_graph_n_nodes(gf);
    }
    qsort(per_node, (size_t) n, sizeof(double), cmp_double);
    printf("nodes %d graphs %d threads %d ns_per_node %.2f\n", ggml_graph_n_nodes(gf), n_graphs, threads, per_node[n / 2]);
    free(per_node);
    ggml_backend_sched_free(sched);
    ggml_free(t.ctx);
    ggml_backend_free(cpu);
    return 0;
}
