/* A scheduler of Vulkan0 and the CPU and one graph with a node of each fallback kind, for tests/e2e/placement.sh:
 * a_dev = w_dev x and d_dev = w_dev c run on the device; b_custom, a custom op (ggml_map_custom1), is one no device
 * backend supports; c_hostw multiplies by weights kept in a host buffer. Computed three times, as tokens are. */
#include <stdio.h>
#include <string.h>

#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "ggml.h"

#define N 64

static void negate(struct ggml_tensor *dst, const struct ggml_tensor *a, int ith, int nth, void *userdata) {
    (void) userdata;
    float       *d = dst->data;
    const float *s = a->data;
    for (int64_t i = ith; i < ggml_nelements(dst); i += nth) d[i] = -s[i];
}

static struct ggml_tensor *weights(ggml_backend_t backend, struct ggml_context **ctx, const char *name) {
    struct ggml_init_params p = { 2 * ggml_tensor_overhead(), NULL, true };
    *ctx                      = ggml_init(p);
    struct ggml_tensor *w     = ggml_new_tensor_2d(*ctx, GGML_TYPE_F32, N, N);
    ggml_set_name(w, name);
    ggml_backend_buffer_t buf = ggml_backend_alloc_ctx_tensors(*ctx, backend);
    ggml_backend_buffer_set_usage(buf, GGML_BACKEND_BUFFER_USAGE_WEIGHTS);
    static float data[N * N];
    for (int i = 0; i < N * N; i++) data[i] = (float) ((i * 7) % 13) / 13.0f - 0.5f;
    ggml_backend_tensor_set(w, data, 0, sizeof(data));
    return w;
}

int main(void) {
    ggml_backend_load_all();
    ggml_backend_dev_t dev = ggml_backend_dev_by_name("Vulkan0");
    if (!dev) return fprintf(stderr, "placement_fallback: no Vulkan0 device\n"), 1;
    ggml_backend_t vk = ggml_backend_dev_init(dev, NULL), cpu = ggml_backend_cpu_init();
    /* one CPU thread: ggml's default of 4 is more than this machine may have, and the sample shows fallbacks only */
    if (cpu) ggml_backend_cpu_set_n_threads(cpu, 1);
    if (!vk || !cpu) return fprintf(stderr, "placement_fallback: no backend\n"), 1;
    struct ggml_context *cw_dev, *cw_host;
    struct ggml_tensor  *w_dev = weights(vk, &cw_dev, "w_dev.weight"), *w_host = weights(cpu, &cw_host, "w_host.weight");

    struct ggml_init_params p   = { 64 * ggml_tensor_overhead() + ggml_graph_overhead(), NULL, true };
    struct ggml_context    *ctx = ggml_init(p);
    struct ggml_tensor     *x   = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, N, 4);
    ggml_set_name(x, "x");
    ggml_set_input(x);
    struct ggml_tensor *a = ggml_mul_mat(ctx, w_dev, x);
    ggml_set_name(a, "a_dev");
    struct ggml_tensor *b = ggml_map_custom1(ctx, a, negate, 1, NULL);
    ggml_set_name(b, "b_custom");
    struct ggml_tensor *c = ggml_mul_mat(ctx, w_host, b);
    ggml_set_name(c, "c_hostw");
    struct ggml_tensor *d = ggml_mul_mat(ctx, w_dev, c);
    ggml_set_name(d, "d_dev");
    struct ggml_tensor *e = ggml_add(ctx, d, a);
    ggml_set_name(e, "e_out");
    ggml_set_output(e);
    struct ggml_cgraph *gf = ggml_new_graph(ctx);
    ggml_build_forward_expand(gf, e);

    ggml_backend_t       backends[2] = { vk, cpu };
    ggml_backend_sched_t sched       = ggml_backend_sched_new(backends, NULL, 2, GGML_DEFAULT_GRAPH_SIZE, false, false);
    float                in[N * 4], out[N * 4];
    for (int i = 0; i < N * 4; i++) in[i] = (float) (i % 5) - 2.0f;
    for (int it = 0; it < 3; it++) {
        ggml_backend_sched_reset(sched);
        if (!ggml_backend_sched_alloc_graph(sched, gf)) return fprintf(stderr, "placement_fallback: cannot allocate\n"), 1;
        ggml_backend_tensor_set(x, in, 0, sizeof(in));
        if (ggml_backend_sched_graph_compute(sched, gf) != GGML_STATUS_SUCCESS) {
            return fprintf(stderr, "placement_fallback: compute failed\n"), 1;
        }
        ggml_backend_tensor_get(e, out, 0, sizeof(out));
    }
    printf("splits %d\nok\n", ggml_backend_sched_get_n_splits(sched));
    ggml_backend_sched_free(sched);
    ggml_free(ctx);
    ggml_free(cw_dev);
    ggml_free(cw_host);
    ggml_backend_free(vk);
    ggml_backend_free(cpu);
    return 0;
}
