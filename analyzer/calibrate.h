/* Measuring this CPU's roofs: memory bandwidth (copy, triad) and F32/F16 matrix-product throughput. */
#ifndef GGPROF_CALIBRATE_H
#define GGPROF_CALIBRATE_H

#include <stddef.h>

typedef struct {
    int    threads;   /* 0: every online CPU */
    size_t array_mib; /* size of each of the three bandwidth arrays; 0: 256 MiB */
    int    matmul_n;  /* M = N = K of the products, rounded up to a multiple of 24; 0: 1008 */
    int    reps;      /* timed repetitions, the best kept; 0: 5 */
} ggprof_calib_opts;

typedef struct {
    int    threads, matmul_n, reps;
    size_t array_bytes;
    double copy_gbps, triad_gbps; /* STREAM's counting: bytes read + bytes written, no write-allocate */
    double f32_gflops, f16_gflops; /* ggprof's blocked kernel: C = A.B^T as ggml's dot products do it */
    const char *kernel;            /* "avx2+fma+f16c" or "portable C": which build of the kernel ran */
    double blas_gflops;            /* OpenBLAS cblas_sgemm on the same product; 0 when not found */
    char   blas_lib[64];           /* the library it was found in */
} ggprof_calib_result;

/* Runs the measurements (about a second). Returns 0, or -1 with a reason (out of memory, a thread). */
int ggprof_calibrate(const ggprof_calib_opts *o, ggprof_calib_result *r, char *why, size_t why_len);

#endif
