/* static_graph: ggml graphs computed on the CPU backend without a scheduler (ggml_backend_graph_compute), the
 * program the static-linking tests build with ggml inside itself (static archives, LTO).
 * usage: static_graph [-n GRAPHS] [-t THREADS] [--exit-status K] [--gallocr]; prints a checksum and "graphs: N", exits
 * K (0). --gallocr: the graph's tensors get their memory from a graph allocator (ggml_gallocr, as stable-diffusion.cpp
 * does), the inputs from a buffer of their own; without it every tensor lies in one buffer. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "ggml.h"

#define N 256

static int fail(const char *what) {
    fprintf(stderr, "static_graph: %s\n", what);
    return 1;
}

static int usage(void) {
    fprintf(stderr, "usage: static_graph [-n GRAPHS] [-t THREADS] [--exit-status K] [--gallocr]\n");
    return 2;
}

/* deterministic data in [-0.5, 0.5): a 32-bit LCG per tensor */
static void fill(float *data, int n, uint32_t seed) {
    uint32_t s = seed;
    for (int i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        data[i] = (float) (s >> 8) / (float) (1u << 24) - 0.5f;
    }
}

static int parse_int(const char *s, int min, int *out) {
    char *end;
    long v = strtol(s, &end, 10);
    if (*s == '\0' || *end != '\0' || v < min || v > 1000000) return -1;
    *out = (int) v;
    return 0;
}

int main(int argc, char **argv) {
    int graphs = 10, threads = 2, exit_status = 0, use_gallocr = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--gallocr") == 0) {
            use_gallocr = 1;
            continue;
        }
        if (i + 1 >= argc) return usage();
        if (strcmp(argv[i], "-n") == 0) {
            if (parse_int(argv[++i], 0, &graphs) != 0) return usage();
        } else if (strcmp(argv[i], "-t") == 0) {
            if (parse_int(argv[++i], 1, &threads) != 0) return usage();
        } else if (strcmp(argv[i], "--exit-status") == 0) {
            if (parse_int(argv[++i], 0, &exit_status) != 0 || exit_status > 255) return usage();
        } else {
            return usage();
        }
    }

    ggml_backend_t backend = ggml_backend_cpu_init();
    if (!backend) return fail("ggml_backend_cpu_init failed");
    ggml_backend_cpu_set_n_threads(backend, threads);

    struct ggml_init_params ip = { 32 * ggml_tensor_overhead() + ggml_graph_overhead(), NULL, true };
    struct ggml_context *ctx = ggml_init(ip);
    if (!ctx) return fail("ggml_init failed");
    struct ggml_tensor *x  = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, N, N);
    struct ggml_tensor *w1 = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, N, N);
    struct ggml_tensor *w2 = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, N, N);
    struct ggml_tensor *b  = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, N);
    struct ggml_tensor *g  = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, N);
    ggml_set_name(x, "x");
    ggml_set_name(w1, "w1");
    ggml_set_name(w2, "w2");
    ggml_set_name(b, "b");
    ggml_set_name(g, "g");
    ggml_set_input(x);
    ggml_backend_buffer_t buf = use_gallocr ? ggml_backend_alloc_ctx_tensors(ctx, backend) : NULL;
    if (use_gallocr && !buf) return fail("ggml_backend_alloc_ctx_tensors failed");

    struct ggml_tensor *h1 = ggml_mul_mat(ctx, w1, x);
    ggml_set_name(h1, "h1");
    struct ggml_tensor *h2 = ggml_mul_mat(ctx, w2, h1);
    ggml_set_name(h2, "h2");
    struct ggml_tensor *hb = ggml_add(ctx, h2, b);
    ggml_set_name(hb, "hb");
    struct ggml_tensor *hn = ggml_rms_norm(ctx, hb, 1e-5f);
    ggml_set_name(hn, "hn");
    struct ggml_tensor *hg = ggml_mul(ctx, hn, g);
    ggml_set_name(hg, "hg");
    struct ggml_tensor *out = ggml_silu(ctx, hg);
    ggml_set_name(out, "out");
    ggml_set_output(out);
    struct ggml_cgraph *gf = ggml_new_graph(ctx);
    ggml_build_forward_expand(gf, out);

    ggml_gallocr_t galloc = NULL;
    if (use_gallocr) {
        galloc = ggml_gallocr_new(ggml_backend_get_default_buffer_type(backend));
        if (!galloc || !ggml_gallocr_alloc_graph(galloc, gf)) return fail("ggml_gallocr_alloc_graph failed");
    } else if (!(buf = ggml_backend_alloc_ctx_tensors(ctx, backend))) {
        return fail("ggml_backend_alloc_ctx_tensors failed");
    }
    float *data = malloc(sizeof(float) * N * N);
    if (!data) return fail("out of memory");
    struct ggml_tensor *inputs[] = { x, w1, w2, b, g };
    for (size_t i = 0; i < sizeof(inputs) / sizeof(inputs[0]); i++) {
        fill(data, (int) ggml_nelements(inputs[i]), 12345u + 7919u * (uint32_t) i);
        ggml_backend_tensor_set(inputs[i], data, 0, ggml_nbytes(inputs[i]));
    }

    for (int i = 0; i < graphs; i++) {
        if (ggml_backend_graph_compute(backend, gf) != GGML_STATUS_SUCCESS) return fail("compute failed");
    }
    double sum = 0;
    if (graphs > 0) {
        ggml_backend_tensor_get(out, data, 0, ggml_nbytes(out));
        for (int i = 0; i < N * N; i++) sum += data[i];
    }
    printf("checksum: %.6f\n", sum);
    printf("graphs: %d\n", graphs);

    free(data);
    ggml_gallocr_free(galloc);
    ggml_backend_buffer_free(buf);
    ggml_free(ctx);
    ggml_backend_free(backend);
    return exit_status;
}
