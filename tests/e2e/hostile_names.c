/* A program whose tensors have hostile names (markup, quotes, commas, a newline, a tab, bytes that are not UTF-8, a
 * character cut by ggml's 63-byte limit): tests/e2e/hostile_names.sh records it and checks that every output of
 * ggprof keeps each name as data, never as markup or structure, and that every JSON output is valid UTF-8. */
#include <stdio.h>

#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "ggml.h"

int main(void) {
    ggml_backend_t cpu = ggml_backend_cpu_init();
    if (!cpu) return fprintf(stderr, "hostile_names: no CPU backend\n"), 1;
    ggml_backend_sched_t sched = ggml_backend_sched_new(&cpu, NULL, 1, GGML_DEFAULT_GRAPH_SIZE, false, true);
    struct ggml_init_params ip = { 8 * ggml_tensor_overhead() + ggml_graph_overhead(), NULL, true };
    struct ggml_context *ctx = ggml_init(ip);
    struct ggml_tensor *a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 32, 32);
    struct ggml_tensor *b = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 32, 32);
    ggml_set_input(a);
    ggml_set_input(b);
    struct ggml_tensor *m = ggml_mul_mat(ctx, a, b);
    ggml_set_name(m, "</script><img src=x onerror=alert(1)>");
    struct ggml_tensor *s = ggml_scale(ctx, m, 0.5f);
    ggml_set_name(s, "q\"uote',comma;\\back\nline\ttab&amp");
    struct ggml_tensor *u = ggml_scale(ctx, s, 2.0f);
    ggml_set_name(u, "bad\xff\xfe-3"); /* two bytes that are not UTF-8 */
    struct ggml_tensor *v = ggml_scale(ctx, u, 0.5f);
    /* 61 bytes and a euro sign (3 bytes): ggml keeps 63, the name ends with the sign's first two bytes */
    ggml_set_name(v, "blk.5.a_name_of_64_bytes_that_ggml_cuts_inside_its_euro_sign_\xe2\x82\xac");
    ggml_set_output(v);
    struct ggml_cgraph *gf = ggml_new_graph(ctx);
    ggml_build_forward_expand(gf, v);
    if (!ggml_backend_sched_alloc_graph(sched, gf)) return fprintf(stderr, "hostile_names: cannot allocate\n"), 1;
    static float data[32 * 32];
    for (int run = 0; run < 3; run++) {
        ggml_backend_tensor_set(a, data, 0, sizeof(data));
        ggml_backend_tensor_set(b, data, 0, sizeof(data));
        if (ggml_backend_sched_graph_compute(sched, gf) != GGML_STATUS_SUCCESS) return 1;
    }
    printf("ok\n");
    return 0;
}
