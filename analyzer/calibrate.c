/* The CPU roofs 'ggprof calibrate' measures: STREAM-style copy and triad, and F32/F16 dot-product matmuls. */
#include "calibrate.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define HAVE_X86 1
#else
#define HAVE_X86 0
#endif

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec + (double) ts.tv_nsec * 1e-9;
}

/* Runs fn(arg_i) on n threads (the caller's being one of them) and returns the wall time of the slowest. */
typedef struct {
    void (*fn)(void *);
    void *arg;
} job;

static void *job_main(void *p) {
    job *j = p;
    j->fn(j->arg);
    return NULL;
}

static double run_parallel(int n, void (*fn)(void *), void *args, size_t arg_size) {
    pthread_t tid[256];
    job       jobs[256];
    double t0 = now_s();
    int started = 0;
    for (int i = 1; i < n; i++) {
        jobs[i] = (job){ fn, (char *) args + (size_t) i * arg_size };
        if (pthread_create(&tid[i], NULL, job_main, &jobs[i]) != 0) break;
        started = i;
    }
    fn(args); /* thread 0's share; a thread that could not start leaves its share undone and the run short */
    for (int i = 1; i <= started; i++) pthread_join(tid[i], NULL);
    double t = now_s() - t0;
    return started == n - 1 ? t : -1;
}

/* ---------------------------------------------------------------- memory bandwidth */

typedef struct {
    double *a, *b, *c;
    size_t  lo, hi;
    int     kind; /* 0 first touch, 1 copy, 2 triad */
} stream_arg;

static void stream_part(void *p) {
    stream_arg *s = p;
    double *a = s->a, *b = s->b, *c = s->c;
    switch (s->kind) {
    case 0:
        /* Each thread touches its own slice first, so the pages sit near the thread that streams them. */
        for (size_t i = s->lo; i < s->hi; i++) a[i] = 1.0, b[i] = 2.0, c[i] = 0.0;
        break;
    case 1:
        for (size_t i = s->lo; i < s->hi; i++) c[i] = a[i];
        break;
    default:
        for (size_t i = s->lo; i < s->hi; i++) a[i] = b[i] + 3.0 * c[i];
        break;
    }
}

static int measure_stream(int threads, size_t n, int reps, double *copy, double *triad) {
    double *a = malloc(n * sizeof(double)), *b = malloc(n * sizeof(double)), *c = malloc(n * sizeof(double));
    stream_arg *args = calloc((size_t) threads, sizeof(*args));
    int rc = -1;
    if (!a || !b || !c || !args) goto out;
    for (int t = 0; t < threads; t++) {
        args[t] = (stream_arg){ a, b, c, n * (size_t) t / (size_t) threads, n * (size_t) (t + 1) / (size_t) threads, 0 };
    }
    if (run_parallel(threads, stream_part, args, sizeof(*args)) < 0) goto out;
    *copy = *triad = 0;
    for (int r = 0; r < reps; r++) {
        for (int kind = 1; kind <= 2; kind++) {
            for (int t = 0; t < threads; t++) args[t].kind = kind;
            double s = run_parallel(threads, stream_part, args, sizeof(*args));
            if (s <= 0) goto out;
            double gbps = (double) n * (kind == 1 ? 16.0 : 24.0) / s / 1e9;
            double *best = kind == 1 ? copy : triad;
            if (gbps > *best) *best = gbps;
        }
    }
    /* The arrays' contents are read once more so that no compiler may drop the loops as dead stores. */
    volatile double sink = a[n / 2] + c[n / 3];
    (void) sink;
    rc = 0;
out:
    free(a);
    free(b);
    free(c);
    free(args);
    return rc;
}

/* ---------------------------------------------------------------- matrix products */

/* C[i][j] = sum_k A[i][k] * B[j][k]: both operands row-major along K, as ggml's MUL_MAT takes src0 and src1.
 * Blocked so that JB rows of B stay in L2 while 4 rows of A stay in L1; a 4 x 3 tile of C lives in registers. */
#define JB 48

static uint16_t f32_to_f16(float f) {
    /* Only for the test data: normal numbers and zero, rounded toward zero; no NaN, infinity or subnormal. */
    uint32_t x;
    memcpy(&x, &f, sizeof(x));
    uint32_t sign = (x >> 16) & 0x8000u;
    int32_t  exp  = (int32_t) ((x >> 23) & 0xff) - 127 + 15;
    if (exp <= 0) return (uint16_t) sign;
    if (exp >= 31) return (uint16_t) (sign | 0x7bffu);
    return (uint16_t) (sign | ((uint32_t) exp << 10) | ((x >> 13) & 0x3ffu));
}

static float f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t) (h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
    uint32_t x = exp == 0 ? sign : sign | ((exp - 15 + 127) << 23) | (man << 13);
    float f;
    memcpy(&f, &x, sizeof(f));
    return f;
}

typedef struct {
    const void *a, *b;
    float      *c;
    int         n, i_lo, i_hi, f16, simd;
} mm_arg;

static void mm_portable(const mm_arg *m) {
    int n = m->n;
    for (int jb = 0; jb < n; jb += JB) {
        int je = jb + JB < n ? jb + JB : n;
        for (int i = m->i_lo; i < m->i_hi; i++) {
            for (int j = jb; j < je; j++) {
                float s = 0;
                if (m->f16) {
                    const uint16_t *a = (const uint16_t *) m->a + (size_t) i * n, *b = (const uint16_t *) m->b + (size_t) j * n;
                    for (int k = 0; k < n; k++) s += f16_to_f32(a[k]) * f16_to_f32(b[k]);
                } else {
                    const float *a = (const float *) m->a + (size_t) i * n, *b = (const float *) m->b + (size_t) j * n;
                    for (int k = 0; k < n; k++) s += a[k] * b[k];
                }
                m->c[(size_t) i * n + j] = s;
            }
        }
    }
}

#if HAVE_X86
__attribute__((target("avx2,fma"))) static float hsum(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

/* One 4 x 3 tile of C over all of K: twelve accumulators in registers, seven loads for twelve FMAs. Written
 * out by hand (and once per operand type) because GCC at -O2 keeps an array of accumulators in memory.
 * F16 operands are widened to F32 as they are loaded (F16C), then multiplied in F32: what ggml's F16 dot
 * product does on x86. */
#define TILE_KERNEL(NAME, T, LOAD)                                                                             \
    __attribute__((target("avx2,fma,f16c"))) static void NAME(const mm_arg *m) {                               \
        int n = m->n;                                                                                          \
        const T *A = m->a, *B = m->b;                                                                          \
        for (int jb = 0; jb < n; jb += JB) {                                                                   \
            int je = jb + JB < n ? jb + JB : n; /* n is a multiple of 24: blocks are multiples of 3 rows */   \
            for (int i = m->i_lo; i < m->i_hi; i += 4) {                                                       \
                const T *a0 = A + (size_t) i * n, *a1 = a0 + n, *a2 = a1 + n, *a3 = a2 + n;                    \
                for (int j = jb; j < je; j += 3) {                                                             \
                    const T *b0 = B + (size_t) j * n, *b1 = b0 + n, *b2 = b1 + n;                              \
                    __m256 c00 = _mm256_setzero_ps(), c01 = c00, c02 = c00, c10 = c00, c11 = c00, c12 = c00;   \
                    __m256 c20 = c00, c21 = c00, c22 = c00, c30 = c00, c31 = c00, c32 = c00;                   \
                    for (int k = 0; k < n; k += 8) {                                                           \
                        __m256 y0 = LOAD(b0 + k), y1 = LOAD(b1 + k), y2 = LOAD(b2 + k), x;                     \
                        x   = LOAD(a0 + k);                                                                    \
                        c00 = _mm256_fmadd_ps(x, y0, c00), c01 = _mm256_fmadd_ps(x, y1, c01);                  \
                        c02 = _mm256_fmadd_ps(x, y2, c02);                                                     \
                        x   = LOAD(a1 + k);                                                                    \
                        c10 = _mm256_fmadd_ps(x, y0, c10), c11 = _mm256_fmadd_ps(x, y1, c11);                  \
                        c12 = _mm256_fmadd_ps(x, y2, c12);                                                     \
                        x   = LOAD(a2 + k);                                                                    \
                        c20 = _mm256_fmadd_ps(x, y0, c20), c21 = _mm256_fmadd_ps(x, y1, c21);                  \
                        c22 = _mm256_fmadd_ps(x, y2, c22);                                                     \
                        x   = LOAD(a3 + k);                                                                    \
                        c30 = _mm256_fmadd_ps(x, y0, c30), c31 = _mm256_fmadd_ps(x, y1, c31);                  \
                        c32 = _mm256_fmadd_ps(x, y2, c32);                                                     \
                    }                                                                                          \
                    float *c = m->c + (size_t) i * n + j;                                                      \
                    c[0] = hsum(c00), c[1] = hsum(c01), c[2] = hsum(c02), c += n;                              \
                    c[0] = hsum(c10), c[1] = hsum(c11), c[2] = hsum(c12), c += n;                              \
                    c[0] = hsum(c20), c[1] = hsum(c21), c[2] = hsum(c22), c += n;                              \
                    c[0] = hsum(c30), c[1] = hsum(c31), c[2] = hsum(c32);                                      \
                }                                                                                              \
            }                                                                                                  \
        }                                                                                                      \
    }

#define LOAD_F32(p) _mm256_loadu_ps(p)
#define LOAD_F16(p) _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *) (const void *) (p)))
TILE_KERNEL(mm_avx2_f32, float, LOAD_F32)
TILE_KERNEL(mm_avx2_f16, uint16_t, LOAD_F16)
#endif

static void mm_part(void *p) {
    const mm_arg *m = p;
#if HAVE_X86
    if (m->simd) {
        (m->f16 ? mm_avx2_f16 : mm_avx2_f32)(m);
        return;
    }
#endif
    mm_portable(m);
}

static int simd_ok(void) {
#if HAVE_X86
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
#else
    return 0;
#endif
}

/* A kernel that computed garbage fast would set a false roof: a few elements are checked against a plain dot
 * product. The data are multiples of 1/32 with small sums, exact in F32 in any order of summation. */
static int product_ok(int n, const float *a, const float *b, const float *c) {
    for (int s = 0; s < 7; s++) {
        int i = (int) ((size_t) s * 7919u % (size_t) n), j = (int) ((size_t) s * 104729u % (size_t) n);
        float want = 0;
        for (int k = 0; k < n; k++) want += a[(size_t) i * n + k] * b[(size_t) j * n + k];
        if (c[(size_t) i * n + j] != want) return 0;
    }
    return 1;
}

/* Best GFLOP/s of reps products on threads threads (rows of C split between them, 4 at a time). */
static double measure_mm(int threads, int n, int reps, int f16, int simd, const void *a, const void *b, float *c) {
    mm_arg *args = calloc((size_t) threads, sizeof(*args));
    if (!args) return -1;
    int quads = n / 4;
    for (int t = 0; t < threads; t++) {
        args[t] = (mm_arg){ a, b, c, n, 4 * (quads * t / threads), 4 * (quads * (t + 1) / threads), f16, simd };
    }
    double best = 0;
    for (int r = 0; r <= reps; r++) { /* the first run warms caches and pages, and is not counted */
        double s = run_parallel(threads, mm_part, args, sizeof(*args));
        if (s <= 0) {
            best = -1;
            break;
        }
        double gflops = 2.0 * n * (double) n * n / s / 1e9;
        if (r > 0 && gflops > best) best = gflops;
    }
    free(args);
    return best;
}

/* OpenBLAS, when the machine has it: opened at run time so that ggprof neither needs nor links it. */
typedef void (*sgemm_fn)(int order, int trans_a, int trans_b, int m, int n, int k, float alpha, const float *a,
                         int lda, const float *b, int ldb, float beta, float *c, int ldc);

static double measure_blas(int threads, int n, int reps, const float *a, const float *b, float *c, char *lib,
                           size_t lib_len) {
    static const char *const k_libs[] = { "libopenblas.so.0", "libopenblas.so" };
    void *h = NULL;
    for (size_t i = 0; !h && i < sizeof(k_libs) / sizeof(k_libs[0]); i++) {
        h = dlopen(k_libs[i], RTLD_NOW | RTLD_LOCAL);
        if (h) snprintf(lib, lib_len, "%s", k_libs[i]);
    }
    if (!h) return 0;
    sgemm_fn sgemm = (sgemm_fn) (uintptr_t) dlsym(h, "cblas_sgemm");
    void (*set_threads)(int) = (void (*)(int)) (uintptr_t) dlsym(h, "openblas_set_num_threads");
    double best = 0;
    if (sgemm) {
        if (set_threads) set_threads(threads);
        enum { ROW_MAJOR = 101, NO_TRANS = 111, TRANS = 112 }; /* CBLAS's enum values */
        for (int r = 0; r <= reps; r++) {
            double t0 = now_s();
            sgemm(ROW_MAJOR, NO_TRANS, TRANS, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n);
            double s = now_s() - t0, gflops = 2.0 * n * (double) n * n / s / 1e9;
            if (r > 0 && gflops > best) best = gflops;
        }
    }
    /* Not closed: OpenBLAS keeps worker threads that must not outlive their code. */
    return best;
}

int ggprof_calibrate(const ggprof_calib_opts *o, ggprof_calib_result *r, char *why, size_t why_len) {
    memset(r, 0, sizeof(*r));
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    r->threads  = o->threads > 0 ? o->threads : online > 0 ? (int) online : 1;
    if (r->threads > 256) r->threads = 256;
    r->reps        = o->reps > 0 ? o->reps : 5;
    r->array_bytes = (o->array_mib ? o->array_mib : 256) << 20;
    int n          = o->matmul_n > 0 ? o->matmul_n : 1008;
    r->matmul_n = n = (n + 23) / 24 * 24;

    if (measure_stream(r->threads, r->array_bytes / sizeof(double), r->reps, &r->copy_gbps, &r->triad_gbps) != 0) {
        snprintf(why, why_len, "bandwidth test: cannot allocate 3 x %zu MiB or start %d threads", r->array_bytes >> 20,
                 r->threads);
        return -1;
    }
    size_t nn = (size_t) n * (size_t) n;
    float *a = malloc(nn * sizeof(float)), *b = malloc(nn * sizeof(float)), *c = malloc(nn * sizeof(float));
    uint16_t *ah = malloc(nn * sizeof(uint16_t)), *bh = malloc(nn * sizeof(uint16_t));
    int rc = -1;
    if (!a || !b || !c || !ah || !bh) {
        snprintf(why, why_len, "matmul test: cannot allocate %d x %d matrices", n, n);
        goto out;
    }
    for (size_t i = 0; i < nn; i++) {
        /* Small multiples of 1/8: exact in F16, so both kernels multiply the same numbers. */
        a[i]  = (float) ((int) (i % 7) - 3) * 0.125f;
        b[i]  = (float) ((int) (i % 5) - 2) * 0.25f;
        ah[i] = f32_to_f16(a[i]);
        bh[i] = f32_to_f16(b[i]);
    }
    int simd  = simd_ok();
    r->kernel = simd ? "avx2+fma+f16c" : "portable C";
    int mm_reps = r->reps < 3 ? r->reps : 3;
    const char *bad = NULL;
    memset(c, 0xff, nn * sizeof(float));
    r->f32_gflops = measure_mm(r->threads, n, mm_reps, 0, simd, a, b, c);
    if (r->f32_gflops > 0 && !product_ok(n, a, b, c)) bad = "F32 kernel";
    memset(c, 0xff, nn * sizeof(float));
    r->f16_gflops = measure_mm(r->threads, n, mm_reps, 1, simd, ah, bh, c);
    if (r->f16_gflops > 0 && !bad && !product_ok(n, a, b, c)) bad = "F16 kernel";
    if (r->f32_gflops < 0 || r->f16_gflops < 0) {
        snprintf(why, why_len, "matmul test: cannot start %d threads", r->threads);
        goto out;
    }
    memset(c, 0xff, nn * sizeof(float));
    r->blas_gflops = measure_blas(r->threads, n, mm_reps, a, b, c, r->blas_lib, sizeof(r->blas_lib));
    if (r->blas_gflops > 0 && !bad && !product_ok(n, a, b, c)) bad = "OpenBLAS cblas_sgemm";
    if (bad) {
        snprintf(why, why_len, "matmul test: the %s computed a wrong product (%s)", bad, r->kernel);
        goto out;
    }
    rc = 0;
out:
    free(a);
    free(b);
    free(c);
    free(ah);
    free(bh);
    return rc;
}
