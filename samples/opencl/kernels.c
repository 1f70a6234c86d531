/* An OpenCL program for tests/e2e/opencl.sh: vector adds, a matmul and a task on two queues, checked on the host. */
#define _GNU_SOURCE
#define CL_TARGET_OPENCL_VERSION 300
/* clCreateCommandQueue and clEnqueueTask are deprecated since 2.0 but what many programs (ggml's OpenCL backend
 * among them) still call. */
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#include <CL/cl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* It knows nothing of ggprof. It prints what it enqueued, per kernel name, and the CLOCK_MONOTONIC span of its
 * main(), so that the test can compare the trace with what really happened. Half the launches pass an event
 * (released at once or after waiting on it), half pass NULL; one queue is made the OpenCL 1.x way, the other
 * with clCreateCommandQueueWithProperties. */

static const char *k_src =
    "__kernel void vec_add(__global const float *a, __global const float *b, __global float *c) {\n"
    "    size_t i = get_global_id(0);\n"
    "    c[i] = a[i] + b[i];\n"
    "}\n"
    "__kernel void mat_mul(__global const float *a, __global const float *b, __global float *c, int n) {\n"
    "    int row = get_global_id(1), col = get_global_id(0);\n"
    "    float acc = 0.0f;\n"
    "    for (int k = 0; k < n; k++) acc += a[row * n + k] * b[k * n + col];\n"
    "    c[row * n + col] = acc;\n"
    "}\n"
    "__kernel void fill_task(__global float *x, int n, float v) {\n"
    "    for (int i = 0; i < n; i++) x[i] = v + i;\n"
    "}\n";

#define N_VEC    4096
#define N_MAT    48
#define N_ITERS  12
#define N_TASK   256

static unsigned long long now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (unsigned long long) ts.tv_sec * 1000000000ull + (unsigned long long) ts.tv_nsec;
}

#define CHECK_CL(call)                                                                                         \
    do {                                                                                                       \
        cl_int _e = (call);                                                                                    \
        if (_e != CL_SUCCESS) {                                                                                \
            fprintf(stderr, "opencl sample: %s failed: %d (line %d)\n", #call, _e, __LINE__);                  \
            exit(1);                                                                                           \
        }                                                                                                      \
    } while (0)

int main(void) {
    unsigned long long begin = now_ns();
    cl_platform_id plat;
    cl_device_id   dev;
    cl_uint        n_plat = 0;
    CHECK_CL(clGetPlatformIDs(1, &plat, &n_plat));
    CHECK_CL(clGetDeviceIDs(plat, CL_DEVICE_TYPE_ALL, 1, &dev, NULL));
    cl_int err;
    cl_context ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    CHECK_CL(err);
    cl_command_queue q1 = clCreateCommandQueue(ctx, dev, 0, &err);
    CHECK_CL(err);
    cl_command_queue q2 = clCreateCommandQueueWithProperties(ctx, dev, NULL, &err);
    CHECK_CL(err);

    cl_program prog = clCreateProgramWithSource(ctx, 1, &k_src, NULL, &err);
    CHECK_CL(err);
    CHECK_CL(clBuildProgram(prog, 1, &dev, "", NULL, NULL));
    cl_kernel k_add  = clCreateKernel(prog, "vec_add", &err);
    CHECK_CL(err);
    cl_kernel k_mat  = clCreateKernel(prog, "mat_mul", &err);
    CHECK_CL(err);
    cl_kernel k_task = clCreateKernel(prog, "fill_task", &err);
    CHECK_CL(err);

    static float a[N_VEC], b[N_VEC], c[N_VEC], ma[N_MAT * N_MAT], mb[N_MAT * N_MAT], mc[N_MAT * N_MAT];
    static float t[N_TASK];
    for (int i = 0; i < N_VEC; i++) {
        a[i] = (float) i;
        b[i] = (float) (2 * i + 1);
    }
    for (int i = 0; i < N_MAT * N_MAT; i++) {
        ma[i] = (float) (i % 7) - 3.0f;
        mb[i] = (float) (i % 5) * 0.5f;
    }
    cl_mem da  = clCreateBuffer(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, sizeof(a), a, &err);
    CHECK_CL(err);
    cl_mem db  = clCreateBuffer(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, sizeof(b), b, &err);
    CHECK_CL(err);
    cl_mem dc  = clCreateBuffer(ctx, CL_MEM_WRITE_ONLY, sizeof(c), NULL, &err);
    CHECK_CL(err);
    cl_mem dma = clCreateBuffer(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, sizeof(ma), ma, &err);
    CHECK_CL(err);
    cl_mem dmb = clCreateBuffer(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, sizeof(mb), mb, &err);
    CHECK_CL(err);
    cl_mem dmc = clCreateBuffer(ctx, CL_MEM_WRITE_ONLY, sizeof(mc), NULL, &err);
    CHECK_CL(err);
    cl_mem dt  = clCreateBuffer(ctx, CL_MEM_WRITE_ONLY, sizeof(t), NULL, &err);
    CHECK_CL(err);
    int n_mat = N_MAT, n_task = N_TASK;
    float v0 = 0.5f;
    CHECK_CL(clSetKernelArg(k_add, 0, sizeof(cl_mem), &da));
    CHECK_CL(clSetKernelArg(k_add, 1, sizeof(cl_mem), &db));
    CHECK_CL(clSetKernelArg(k_add, 2, sizeof(cl_mem), &dc));
    CHECK_CL(clSetKernelArg(k_mat, 0, sizeof(cl_mem), &dma));
    CHECK_CL(clSetKernelArg(k_mat, 1, sizeof(cl_mem), &dmb));
    CHECK_CL(clSetKernelArg(k_mat, 2, sizeof(cl_mem), &dmc));
    CHECK_CL(clSetKernelArg(k_mat, 3, sizeof(int), &n_mat));
    CHECK_CL(clSetKernelArg(k_task, 0, sizeof(cl_mem), &dt));
    CHECK_CL(clSetKernelArg(k_task, 1, sizeof(int), &n_task));
    CHECK_CL(clSetKernelArg(k_task, 2, sizeof(float), &v0));

    int n_add = 0, n_mm = 0, n_tk = 0, n_with_event = 0;
    size_t g_vec = N_VEC, g_mat[2] = { N_MAT, N_MAT };
    for (int it = 0; it < N_ITERS; it++) {
        cl_event ev = NULL;
        /* vec_add on q1: even iterations with an event the program waits on, odd ones without. */
        CHECK_CL(clEnqueueNDRangeKernel(q1, k_add, 1, NULL, &g_vec, NULL, 0, NULL, it % 2 ? NULL : &ev));
        n_add++;
        if (ev) {
            CHECK_CL(clWaitForEvents(1, &ev));
            CHECK_CL(clReleaseEvent(ev));
            n_with_event++;
            ev = NULL;
        }
        /* mat_mul on q2, twice: the first with an event released at once (before the kernel may have run). */
        CHECK_CL(clEnqueueNDRangeKernel(q2, k_mat, 2, NULL, g_mat, NULL, 0, NULL, &ev));
        CHECK_CL(clReleaseEvent(ev));
        n_with_event++;
        CHECK_CL(clEnqueueNDRangeKernel(q2, k_mat, 2, NULL, g_mat, NULL, 0, NULL, NULL));
        n_mm += 2;
        if (it % 4 == 3) {
            v0 = 0.5f + (float) it;
            CHECK_CL(clSetKernelArg(k_task, 2, sizeof(float), &v0));
            CHECK_CL(clEnqueueTask(q1, k_task, 0, NULL, NULL));
            n_tk++;
        }
    }
    CHECK_CL(clFinish(q1));
    CHECK_CL(clFinish(q2));
    CHECK_CL(clEnqueueReadBuffer(q1, dc, CL_TRUE, 0, sizeof(c), c, 0, NULL, NULL));
    CHECK_CL(clEnqueueReadBuffer(q2, dmc, CL_TRUE, 0, sizeof(mc), mc, 0, NULL, NULL));
    CHECK_CL(clEnqueueReadBuffer(q1, dt, CL_TRUE, 0, sizeof(t), t, 0, NULL, NULL));

    int bad = 0;
    for (int i = 0; i < N_VEC; i++) bad += c[i] != a[i] + b[i];
    for (int r = 0; r < N_MAT; r++) {
        for (int col = 0; col < N_MAT; col++) {
            float acc = 0.0f;
            for (int k = 0; k < N_MAT; k++) acc += ma[r * N_MAT + k] * mb[k * N_MAT + col];
            bad += fabsf(mc[r * N_MAT + col] - acc) > 1e-3f * (1.0f + fabsf(acc));
        }
    }
    for (int i = 0; i < N_TASK; i++) bad += t[i] != v0 + (float) i;

    clReleaseMemObject(da);
    clReleaseMemObject(db);
    clReleaseMemObject(dc);
    clReleaseMemObject(dma);
    clReleaseMemObject(dmb);
    clReleaseMemObject(dmc);
    clReleaseMemObject(dt);
    clReleaseKernel(k_add);
    clReleaseKernel(k_mat);
    clReleaseKernel(k_task);
    clReleaseProgram(prog);
    clReleaseCommandQueue(q1);
    clReleaseCommandQueue(q2);
    clReleaseContext(ctx);

    printf("enqueued vec_add %d\n", n_add);
    printf("enqueued mat_mul %d\n", n_mm);
    printf("enqueued fill_task %d\n", n_tk);
    printf("launches with an event %d\n", n_with_event);
    printf("results %s (%d wrong)\n", bad ? "WRONG" : "ok", bad);
    printf("span %llu %llu\n", begin, now_ns());
    return bad ? 1 : 0;
}
