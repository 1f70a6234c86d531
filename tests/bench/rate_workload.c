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

#include "../e2e/tiny_graph.h"

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
    tiny_graph t;
    if (tiny_graph_make(&t, cpu, n_ops, 0) != 0) return fprintf(stderr, "rate_workload: cannot allocate\n"), 1;
    ggml_backend_sched_t sched = t.sched;
    struct ggml_cgraph *gf = t.gf;
    struct ggml_tensor *x = t.x;
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
    ggml_free(t.ctx);
    ggml_backend_free(cpu);
    return 0;
}
