/* A graph with each kind of node the CPU tick models decide on (an RMS_NORM+MUL pair ggml fuses, empty ops, plain
 * ops), computed RUNS times through a scheduler. Before compute ABORT_AT the program's own abort callback stops
 * ggml after its second call, as a program cancelling a request would: ggml ticks fewer times than any model
 * expects. tests/e2e/tick_models.sh checks what the trace says of each compute. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "ggml.h"

#define RUNS     6
#define ABORT_AT 4

static int  g_calls;
static bool g_abort;

static bool app_abort(void *data) {
    (void) data;
    return g_abort && ++g_calls == 2;
}

int main(void) {
    ggml_backend_t cpu = ggml_backend_cpu_init();
    if (!cpu) return fprintf(stderr, "tick_models: no CPU backend\n"), 1;
    ggml_backend_cpu_set_n_threads(cpu, 2);
    ggml_backend_cpu_set_abort_callback(cpu, app_abort, NULL);
    ggml_backend_sched_t sched = ggml_backend_sched_new(&cpu, NULL, 1, GGML_DEFAULT_GRAPH_SIZE, false, true);

    struct ggml_init_params ip = { 32 * ggml_tensor_overhead() + ggml_graph_overhead(), NULL, true };
    struct ggml_context *ctx = ggml_init(ip);
    struct ggml_tensor *x = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 64, 8);
    ggml_set_name(x, "x");
    ggml_set_input(x);
    struct ggml_tensor *w = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 64);
    ggml_set_name(w, "w");
    ggml_set_input(w);
    struct ggml_tensor *n = ggml_rms_norm(ctx, x, 1e-5f);
    ggml_set_name(n, "norm");
    struct ggml_tensor *nw = ggml_mul(ctx, n, w); /* fused with the norm by ggml 0.23's CPU backend */
    ggml_set_name(nw, "normed_w");
    struct ggml_tensor *r = ggml_reshape_2d(ctx, nw, 32, 16); /* empty op */
    ggml_set_name(r, "r");
    struct ggml_tensor *s = ggml_scale(ctx, r, 0.5f);
    ggml_set_name(s, "s");
    struct ggml_tensor *t = ggml_transpose(ctx, s); /* empty op */
    ggml_set_name(t, "t");
    struct ggml_tensor *c = ggml_cont(ctx, t);
    ggml_set_name(c, "c");
    struct ggml_tensor *out = ggml_soft_max(ctx, c);
    ggml_set_name(out, "out");
    ggml_set_output(out);
    struct ggml_cgraph *gf = ggml_new_graph(ctx);
    ggml_build_forward_expand(gf, out);
    if (!ggml_backend_sched_alloc_graph(sched, gf)) return fprintf(stderr, "tick_models: cannot allocate\n"), 1;

    float xd[64 * 8], wd[64];
    for (int i = 0; i < 64 * 8; i++) xd[i] = (float) (i % 13) / 13.0f;
    for (int i = 0; i < 64; i++) wd[i] = 1.0f + (float) i / 64.0f;
    for (int run = 0; run < RUNS; run++) {
        g_abort = run == ABORT_AT;
        g_calls = 0;
        ggml_backend_tensor_set(x, xd, 0, sizeof(xd));
        ggml_backend_tensor_set(w, wd, 0, sizeof(wd));
        enum ggml_status st = ggml_backend_sched_graph_compute(sched, gf);
        if (st != (g_abort ? GGML_STATUS_ABORTED : GGML_STATUS_SUCCESS)) {
            return fprintf(stderr, "tick_models: compute %d returned %d\n", run, (int) st), 1;
        }
    }
    ggml_free(ctx);
    ggml_backend_sched_free(sched);
    ggml_backend_free(cpu);
    printf("ok\n");
    return 0;
}
