/* late_ggml_inside_liba.c: the code of liba.so, a library that carries ggml inside it (tests/e2e/late_ggml_inside.sh
 * links ggml's PIC static archives into it with -Bsymbolic, as an addon that bundles ggml does): its calls into ggml
 * are direct, none passes a PLT the engine could interpose. liba_compute computes graphs on a CPU backend made
 * afresh every PER_BACKEND graphs, so that the graphs on backends made after the engine patched ggml's entries are
 * recorded. Each backend is freed before the next is made, so that malloc hands the next one the same address: the
 * engine must forget a freed backend's tick (ggml_backend_free), or the new one is never timed. */
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "ggml.h"

#define N      128
#define LAYERS 6

int liba_compute(int graphs, int per_backend, int threads, uint64_t *sums, _Atomic int *done);

/* deterministic data in [-0.5, 0.5): a 32-bit LCG per tensor */
static void fill(float *data, int n, uint32_t seed) {
    uint32_t s = seed;
    for (int i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        data[i] = (float) (s >> 8) / (float) (1u << 24) - 0.5f;
    }
}

/* FNV-1a over the output's bytes: any difference in any float shows. */
static uint64_t fnv(const void *p, size_t n) {
    const unsigned char *b = p;
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

/* One graph: LAYERS of mul_mat, add, rms_norm, mul, silu over an N x N input; its output's hash in *sum. */
static int compute_one(ggml_backend_t backend, int index, float *data, uint64_t *sum) {
    struct ggml_init_params ip = { (7 * LAYERS + 8) * ggml_tensor_overhead() + ggml_graph_overhead(), NULL, true };
    struct ggml_context *ctx = ggml_init(ip);
    if (!ctx) return -1;
    struct ggml_tensor *x = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, N, N);
    struct ggml_tensor *w[LAYERS], *bias[LAYERS];
    for (int l = 0; l < LAYERS; l++) {
        w[l]    = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, N, N);
        bias[l] = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, N);
    }
    struct ggml_tensor *h = x;
    for (int l = 0; l < LAYERS; l++) {
        h = ggml_mul_mat(ctx, w[l], h);
        h = ggml_add(ctx, h, bias[l]);
        h = ggml_rms_norm(ctx, h, 1e-5f);
        h = ggml_mul(ctx, h, bias[l]);
        h = ggml_silu(ctx, h);
    }
    ggml_set_name(h, "out");
    struct ggml_cgraph *gf = ggml_new_graph(ctx);
    ggml_build_forward_expand(gf, h);
    ggml_backend_buffer_t buf = ggml_backend_alloc_ctx_tensors(ctx, backend);
    int rc = -1;
    if (buf) {
        fill(data, N * N, 12345u + 7919u * (uint32_t) index);
        ggml_backend_tensor_set(x, data, 0, ggml_nbytes(x));
        for (int l = 0; l < LAYERS; l++) {
            fill(data, N * N, 777u + 31u * (uint32_t) l);
            ggml_backend_tensor_set(w[l], data, 0, ggml_nbytes(w[l]));
            fill(data, N, 99u + (uint32_t) l);
            ggml_backend_tensor_set(bias[l], data, 0, ggml_nbytes(bias[l]));
        }
        if (ggml_backend_graph_compute(backend, gf) == GGML_STATUS_SUCCESS) {
            ggml_backend_tensor_get(h, data, 0, ggml_nbytes(h));
            *sum = fnv(data, ggml_nbytes(h));
            rc = 0;
        }
        ggml_backend_buffer_free(buf);
    }
    ggml_free(ctx);
    return rc;
}

/* Computes graphs one after another, a new CPU backend every per_backend of them, each output's hash in sums[i], the
 * count done so far in *done. 0, or -1 when one failed. */
int liba_compute(int graphs, int per_backend, int threads, uint64_t *sums, _Atomic int *done) {
    int             n_backends = (graphs + per_backend - 1) / per_backend;
    float          *data       = malloc(sizeof(float) * N * N);
    ggml_backend_t *backends   = calloc((size_t) n_backends, sizeof(ggml_backend_t));
    int             rc         = data && backends ? 0 : -1;
    for (int i = 0; i < graphs && rc == 0; i++) {
        ggml_backend_t *b = &backends[i / per_backend];
        if (i > 0 && i % per_backend == 0 && b[-1]) {
            ggml_backend_free(b[-1]);
            b[-1] = NULL;
        }
        if (!*b && (*b = ggml_backend_cpu_init()) != NULL) ggml_backend_cpu_set_n_threads(*b, threads);
        rc = *b ? compute_one(*b, i, data, &sums[i]) : -1;
        atomic_store(done, i + 1);
    }
    for (int i = 0; backends && i < n_backends; i++) {
        if (backends[i]) ggml_backend_free(backends[i]);
    }
    free(backends);
    free(data);
    return rc;
}
