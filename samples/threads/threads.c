/* Several threads computing ggml graphs at once, each on a scheduler of its own (as a server does with one
 * context per worker), each graph computed by 2 ggml threads: what the engine must record without confusing one
 * thread's graphs with another's. tests/e2e/threads.sh runs it under `ggprof record` (and, in a build made with
 * SAN=thread, under ThreadSanitizer).
 *   threads [THREADS [GRAPHS]]   default 4 threads of 50 graphs; the output of thread i is named "thread<i>" */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "ggml.h"

enum { N = 64 };

typedef struct {
    int id, graphs, status;
} job;

static void *worker(void *arg) {
    job *j = arg;
    j->status = 1;
    ggml_backend_t cpu = ggml_backend_cpu_init();
    if (!cpu) return NULL;
    ggml_backend_cpu_set_n_threads(cpu, 2);
    ggml_backend_sched_t sched = ggml_backend_sched_new(&cpu, NULL, 1, GGML_DEFAULT_GRAPH_SIZE, false, true);
    struct ggml_init_params ip = { 16 * ggml_tensor_overhead() + ggml_graph_overhead(), NULL, true };
    struct ggml_context *ctx = ggml_init(ip);
    struct ggml_tensor *w = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, N, N);
    struct ggml_tensor *x = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, N, 8);
    ggml_set_input(w);
    ggml_set_input(x);
    struct ggml_tensor *out = ggml_soft_max(ctx, ggml_mul_mat(ctx, w, x));
    char name[32];
    snprintf(name, sizeof(name), "thread%d", j->id);
    ggml_set_name(out, name);
    ggml_set_output(out);
    struct ggml_cgraph *gf = ggml_new_graph(ctx);
    ggml_build_forward_expand(gf, out);
    if (ggml_backend_sched_alloc_graph(sched, gf)) {
        static const float zeros[N * N];
        j->status = 0;
        for (int g = 0; g < j->graphs && j->status == 0; g++) {
            ggml_backend_tensor_set(w, zeros, 0, sizeof(float) * N * N);
            ggml_backend_tensor_set(x, zeros, 0, sizeof(float) * N * 8);
            if (ggml_backend_sched_graph_compute(sched, gf) != GGML_STATUS_SUCCESS) j->status = 1;
        }
    }
    ggml_backend_sched_free(sched);
    ggml_free(ctx);
    ggml_backend_free(cpu);
    return NULL;
}

int main(int argc, char **argv) {
    int threads = argc > 1 ? atoi(argv[1]) : 4, graphs = argc > 2 ? atoi(argv[2]) : 50;
    if (threads < 1 || threads > 64 || graphs < 1) {
        fprintf(stderr, "usage: threads [THREADS (1-64) [GRAPHS]]\n");
        return 2;
    }
    pthread_t t[64];
    job       j[64];
    for (int i = 0; i < threads; i++) {
        j[i] = (job) { i, graphs, 1 };
        if (pthread_create(&t[i], NULL, worker, &j[i]) != 0) return perror("pthread_create"), 1;
    }
    int failed = 0;
    for (int i = 0; i < threads; i++) {
        pthread_join(t[i], NULL);
        failed += j[i].status;
    }
    if (failed) fprintf(stderr, "threads: %d of %d threads failed\n", failed, threads);
    return failed ? 1 : 0;
}
