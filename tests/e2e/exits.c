/* A program that computes a graph a few times through a scheduler, then ends abruptly, as the argument says:
 * "_exit" (no atexit handlers), "signal" (_exit from a signal handler), "return" (a plain exit 0).
 * tests/e2e/faults.sh checks that every graph it computed is in the trace however it ended. */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "ggml.h"

#define RUNS 12

static void on_usr1(int sig) {
    (void) sig;
    _exit(4);
}

int main(int argc, char **argv) {
    const char *how = argc > 1 ? argv[1] : "return";
    ggml_backend_t cpu = ggml_backend_cpu_init();
    if (!cpu) return fprintf(stderr, "exits: no CPU backend\n"), 1;
    ggml_backend_sched_t sched = ggml_backend_sched_new(&cpu, NULL, 1, GGML_DEFAULT_GRAPH_SIZE, false, true);
    struct ggml_init_params ip = { 8 * ggml_tensor_overhead() + ggml_graph_overhead(), NULL, true };
    struct ggml_context *ctx = ggml_init(ip);
    struct ggml_tensor *x = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 64, 64);
    ggml_set_input(x);
    struct ggml_tensor *out = ggml_soft_max(ctx, ggml_scale(ctx, x, 0.5f));
    ggml_set_output(out);
    struct ggml_cgraph *gf = ggml_new_graph(ctx);
    ggml_build_forward_expand(gf, out);
    if (!ggml_backend_sched_alloc_graph(sched, gf)) return fprintf(stderr, "exits: cannot allocate\n"), 1;
    static float data[64 * 64];
    for (int run = 0; run < RUNS; run++) {
        ggml_backend_tensor_set(x, data, 0, sizeof(data));
        if (ggml_backend_sched_graph_compute(sched, gf) != GGML_STATUS_SUCCESS) return 1;
    }
    if (strcmp(how, "_exit") == 0) _exit(3);
    if (strcmp(how, "signal") == 0) {
        signal(SIGUSR1, on_usr1);
        raise(SIGUSR1);
    }
    return 0;
}
