/* The sustained-rate benchmark's workload (tests/bench/sustained_rate.sh): ring_overload.c's graphs of tiny ops on
 * one thread (about two records an op at level op: the op and its barrier record), computed at a steady pace so
 * that the run offers RATE records a second for SECONDS. Prints "graphs N seconds S" at the end.
 *   rate_workload N_OPS RATE SECONDS */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "ggml.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
    int    n_ops   = argc > 1 ? atoi(argv[1]) : 1000;
    double rate    = argc > 2 ? atof(argv[2]) : 1e6;
    double seconds = argc > 3 ? atof(argv[3]) : 3;
    if (n_ops < 1 || !(rate > 0) || !(seconds > 0)) return fprintf(stderr, "usage: rate_workload N_OPS RATE SECONDS\n"), 2;
    ggml_backend_t cpu = ggml_backend_cpu_init();
    if (!cpu) return fprintf(stderr, "rate_workload: no CPU backend\n"), 1;
    ggml_backend_cpu_set_n_threads(cpu, 1);
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
    if (!ggml_backend_sched_alloc_graph(sched, gf)) return fprintf(stderr, "rate_workload: cannot allocate\n"), 1;
    float data[16] = { 1 };
    double per_graph = 2.0 * n_ops / rate, start = now_s(), end = start + seconds;
    long graphs = 0;
    for (;;) {
        double due = start + (double) graphs * per_graph, t = now_s();
        if (due >= end) break;
        if (due > t) {
            struct timespec nap = { (time_t) (due - t), (long) ((due - t - (double) (time_t) (due - t)) * 1e9) };
            nanosleep(&nap, NULL);
        }
        ggml_backend_tensor_set(x, data, 0, sizeof(data));
        if (ggml_backend_sched_graph_compute(sched, gf) != GGML_STATUS_SUCCESS) return 1;
        graphs++;
    }
    printf("graphs %ld seconds %.3f\n", graphs, now_s() - start);
    ggml_backend_sched_free(sched);
    ggml_free(ctx);
    ggml_backend_free(cpu);
    return 0;
}
