/* A program that computes one graph again and again through a ggml scheduler (as llama.cpp does with graph
 * reuse) and changes a node between computes in the two ways a program can: by a ggml call (ggml_set_name),
 * and by writing the tensor's fields itself. tests/e2e/split_plans.sh checks, under 'ggprof record --level op',
 * which description each compute's records carry. Then 300 computes, each on a thread of its own. With the
 * argument "together", only 70 threads instead, each computing once, all alive until the last has computed. */
#define _GNU_SOURCE /* pthread barriers, mallinfo2 */
#include <malloc.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "ggml.h"

#define N    32
#define RUNS 40
#define RENAME_AT 4 /* ggml_set_name(z, "z_renamed") before this compute */
#define WRITE_AT  8 /* strcpy(y->name, "y_direct") before this compute */
#define THREADS   300 /* then this many computes, each on a thread of its own (the ring has 64 slots) */
#define CONCURRENT 70 /* "together": this many threads alive at once, more than the ring's slots */

static ggml_backend_sched_t g_sched;
static struct ggml_cgraph  *g_graph;
static int                  g_failed;

static pthread_mutex_t   g_compute_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t g_all_done;

static void *compute_once(void *stay) {
    pthread_mutex_lock(&g_compute_lock); /* a scheduler computes one graph at a time */
    if (ggml_backend_sched_graph_compute(g_sched, g_graph) != GGML_STATUS_SUCCESS) g_failed = 1;
    pthread_mutex_unlock(&g_compute_lock);
    if (stay) pthread_barrier_wait(&g_all_done); /* alive until every thread has computed */
    return NULL;
}

/* Bytes the program has allocated with malloc, over all arenas (glibc). */
static long heap_kib(void) {
    struct mallinfo2 m = mallinfo2();
    return (long) ((m.uordblks + m.hblkhd) / 1024);
}

int main(int argc, char **argv) {
    /* "together": CONCURRENT threads, each computing once and all alive until the last has, instead. */
    bool together = argc > 1 && strcmp(argv[1], "together") == 0;
    ggml_backend_t cpu = ggml_backend_cpu_init();
    if (!cpu) return fprintf(stderr, "split_plans: no CPU backend\n"), 1;
    ggml_backend_cpu_set_n_threads(cpu, 2);
    ggml_backend_sched_t sched = ggml_backend_sched_new(&cpu, NULL, 1, GGML_DEFAULT_GRAPH_SIZE, false, true);

    struct ggml_init_params ip = { 16 * ggml_tensor_overhead() + ggml_graph_overhead(), NULL, true };
    struct ggml_context *ctx = ggml_init(ip);
    struct ggml_tensor *x = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, N, N);
    ggml_set_name(x, "x");
    ggml_set_input(x);
    struct ggml_tensor *y = ggml_scale(ctx, x, 2.0f);
    ggml_set_name(y, "y");
    struct ggml_tensor *z = ggml_add(ctx, y, x);
    ggml_set_name(z, "z");
    struct ggml_tensor *out = ggml_soft_max(ctx, z);
    ggml_set_name(out, "out");
    ggml_set_output(out);
    struct ggml_cgraph *gf = ggml_new_graph(ctx);
    ggml_build_forward_expand(gf, out);
    if (!ggml_backend_sched_alloc_graph(sched, gf)) return fprintf(stderr, "split_plans: cannot allocate\n"), 1;

    float data[N * N];
    for (int i = 0; i < N * N; i++) data[i] = (float) (i % 17) / 17.0f;
    g_sched = sched;
    g_graph = gf;
    if (together) {
        ggml_backend_tensor_set(x, data, 0, sizeof(data));
        pthread_t t[CONCURRENT];
        pthread_barrier_init(&g_all_done, NULL, CONCURRENT);
        for (int i = 0; i < CONCURRENT; i++) {
            if (pthread_create(&t[i], NULL, compute_once, (void *) 1) != 0) {
                return fprintf(stderr, "split_plans: no thread\n"), 1;
            }
        }
        for (int i = 0; i < CONCURRENT; i++) pthread_join(t[i], NULL);
        if (g_failed) return fprintf(stderr, "split_plans: compute on a thread failed\n"), 1;
        printf("ok\n");
        return 0;
    }
    for (int run = 0; run < RUNS; run++) {
        if (run == RENAME_AT) ggml_set_name(z, "z_renamed");
        if (run == WRITE_AT) strcpy(y->name, "y_direct");
        ggml_backend_tensor_set(x, data, 0, sizeof(data));
        if (ggml_backend_sched_graph_compute(sched, gf) != GGML_STATUS_SUCCESS) {
            return fprintf(stderr, "split_plans: compute failed\n"), 1;
        }
    }
    /* A thread per compute (a server's request threads): what the engine keeps per thread goes with it. */
    long heap0 = heap_kib();
    for (int i = 0; i < THREADS && !g_failed; i++) {
        pthread_t t;
        if (pthread_create(&t, NULL, compute_once, NULL) != 0) return fprintf(stderr, "split_plans: no thread\n"), 1;
        pthread_join(t, NULL);
    }
    if (g_failed) return fprintf(stderr, "split_plans: compute on a thread failed\n"), 1;
    printf("heap growth over %d threads: %ld KiB\n", THREADS, heap_kib() - heap0);
    ggml_free(ctx);
    ggml_backend_sched_free(sched);
    ggml_backend_free(cpu);
    printf("ok\n");
    return 0;
}
