// A CUDA program for tests/device/cuda_cupti.sh: kernels on two streams and a replayed CUDA graph, checked on the host.
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

// It knows nothing of ggprof. It prints what it launched, per kernel name, the graph's shape and replays, and the
// CLOCK_MONOTONIC span of its main(), so that the check can compare the trace with what really happened. The
// graph is a chain (each node depends on the one before), so its kernels run one after another on the stream,
// as the direct launches on each stream do. cudaDeviceReset at the end destroys the context before exit: the
// records of a destroyed context must still arrive.

extern "C" __global__ void vec_add(const float *a, const float *b, float *c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}

extern "C" __global__ void saxpy(float alpha, const float *x, float *y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = alpha * x[i] + y[i];
}

// A template, as ggml-cuda's kernels are: its record carries a mangled name that ggprof demangles.
template <typename T> __global__ void scale_kernel(T *x, int n, T s) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = x[i] * s;
}

#define N        (1 << 16)
#define N_ITERS  20
#define N_REPLAY 5

#define CHECK_CUDA(call)                                                                                       \
    do {                                                                                                       \
        cudaError_t _e = (call);                                                                               \
        if (_e != cudaSuccess) {                                                                               \
            fprintf(stderr, "cuda sample: %s failed: %s (line %d)\n", #call, cudaGetErrorString(_e), __LINE__); \
            exit(1);                                                                                           \
        }                                                                                                      \
    } while (0)

static unsigned long long now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (unsigned long long) ts.tv_sec * 1000000000ull + (unsigned long long) ts.tv_nsec;
}

int main(void) {
    unsigned long long begin = now_ns();
    float *a, *b, *c, *x, *y;
    CHECK_CUDA(cudaMalloc(&a, N * sizeof(float)));
    CHECK_CUDA(cudaMalloc(&b, N * sizeof(float)));
    CHECK_CUDA(cudaMalloc(&c, N * sizeof(float)));
    CHECK_CUDA(cudaMalloc(&x, N * sizeof(float)));
    CHECK_CUDA(cudaMalloc(&y, N * sizeof(float)));
    float *h = (float *) malloc(N * sizeof(float)), *h2 = (float *) malloc(N * sizeof(float));
    for (int i = 0; i < N; i++) h[i] = (float) (i % 100);
    CHECK_CUDA(cudaMemcpy(a, h, N * sizeof(float), cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemcpy(b, h, N * sizeof(float), cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemcpy(x, h, N * sizeof(float), cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemset(y, 0, N * sizeof(float)));

    cudaStream_t s1, s2;
    CHECK_CUDA(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
    CHECK_CUDA(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
    const int threads = 256, blocks = (N + threads - 1) / threads;
    int n_add = 0, n_saxpy = 0, n_scale = 0;

    // Direct launches: vec_add then scale on s1 (c = 2 (a + b) after each pair), saxpy on s2 (y += x).
    for (int it = 0; it < N_ITERS; it++) {
        vec_add<<<blocks, threads, 0, s1>>>(a, b, c, N);
        scale_kernel<float><<<blocks, threads, 0, s1>>>(c, N, 2.0f);
        saxpy<<<blocks, threads, 0, s2>>>(1.0f, x, y, N);
        n_add++, n_scale++, n_saxpy++;
    }
    CHECK_CUDA(cudaGetLastError());
    CHECK_CUDA(cudaStreamSynchronize(s1));
    CHECK_CUDA(cudaStreamSynchronize(s2));

    // A graph captured on s1: vec_add -> scale -> saxpy, a chain of three kernel nodes, replayed.
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    CHECK_CUDA(cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal));
    vec_add<<<blocks, threads, 0, s1>>>(a, b, c, N);
    scale_kernel<float><<<blocks, threads, 0, s1>>>(c, N, 2.0f);
    saxpy<<<blocks, threads, 0, s1>>>(1.0f, x, y, N);
    CHECK_CUDA(cudaStreamEndCapture(s1, &graph));
    size_t n_nodes = 0;
    CHECK_CUDA(cudaGraphGetNodes(graph, NULL, &n_nodes));
    CHECK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
    for (int r = 0; r < N_REPLAY; r++) CHECK_CUDA(cudaGraphLaunch(exec, s1));
    n_add += N_REPLAY, n_scale += N_REPLAY, n_saxpy += N_REPLAY;
    CHECK_CUDA(cudaStreamSynchronize(s1));

    // Check: c = 2 (a + b) = 4 h; y = (N_ITERS + N_REPLAY) x.
    int bad = 0;
    CHECK_CUDA(cudaMemcpy(h2, c, N * sizeof(float), cudaMemcpyDeviceToHost));
    for (int i = 0; i < N; i++) bad += h2[i] != 4.0f * h[i];
    CHECK_CUDA(cudaMemcpy(h2, y, N * sizeof(float), cudaMemcpyDeviceToHost));
    for (int i = 0; i < N; i++) bad += fabsf(h2[i] - (float) (N_ITERS + N_REPLAY) * h[i]) > 1e-3f * (1.0f + h2[i]);

    CHECK_CUDA(cudaGraphExecDestroy(exec));
    CHECK_CUDA(cudaGraphDestroy(graph));
    CHECK_CUDA(cudaStreamDestroy(s1));
    CHECK_CUDA(cudaStreamDestroy(s2));
    CHECK_CUDA(cudaFree(a));
    CHECK_CUDA(cudaFree(b));
    CHECK_CUDA(cudaFree(c));
    CHECK_CUDA(cudaFree(x));
    CHECK_CUDA(cudaFree(y));
    CHECK_CUDA(cudaDeviceReset());
    free(h);
    free(h2);

    printf("launched vec_add %d\n", n_add);
    printf("launched saxpy %d\n", n_saxpy);
    printf("launched scale_kernel %d\n", n_scale);
    printf("graph nodes %zu replays %d\n", n_nodes, N_REPLAY);
    printf("results %s (%d wrong)\n", bad ? "WRONG" : "ok", bad);
    printf("span %llu %llu\n", begin, now_ns());
    return bad ? 1 : 0;
}
