/* The upstream profiler's C API on a ggml scheduler with the BLAS and CPU backends, served by libggprof.so
 * linked ahead of an unmodified ggml: profile a window of computes, check the records, write, reset. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggml-backend.h"
#include "ggml-profiler.h"
#include "ggml.h"

#define N   64 /* BLAS takes a MUL_MAT from 32 rows and columns on */
#define RUNS 8
#define FIRST_PROFILED 3
#define LAST_PROFILED  5

static int fail(const char *what) {
    fprintf(stderr, "profile_window: %s\n", what);
    return 1;
}

int main(int argc, char **argv) {
    const char *json = argc > 1 ? argv[1] : "profile_window.json";
    const char *text = argc > 2 ? argv[2] : "profile_window.txt";
    ggml_backend_load_all();
    ggml_backend_t cpu  = ggml_backend_init_by_type(GGML_BACKEND_DEVICE_TYPE_CPU, NULL);
    ggml_backend_t blas = ggml_backend_init_by_name("BLAS", NULL);
    if (!cpu || !blas) return fail("needs the CPU and BLAS backends");
    ggml_backend_t backends[2] = { blas, cpu }; /* the scheduler prefers the first that supports an op */
    ggml_backend_sched_t sched = ggml_backend_sched_new(backends, NULL, 2, GGML_DEFAULT_GRAPH_SIZE, false, true);

    struct ggml_init_params ip = { 64 * ggml_tensor_overhead() + ggml_graph_overhead(), NULL, true };
    struct ggml_context *ctx = ggml_init(ip);
    struct ggml_tensor *x = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, N, N);
    struct ggml_tensor *w = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, N, N);
    struct ggml_tensor *b = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, N);
    ggml_set_name(x, "x");
    ggml_set_name(w, "w");
    ggml_set_name(b, "b");
    ggml_set_input(x);
    struct ggml_tensor *y = ggml_mul_mat(ctx, w, x);   /* BLAS */
    ggml_set_name(y, "y");
    struct ggml_tensor *z = ggml_add(ctx, ggml_rms_norm(ctx, y, 1e-5f), b);
    ggml_set_name(z, "z");
    struct ggml_tensor *out = ggml_soft_max(ctx, ggml_scale(ctx, z, 0.5f));
    ggml_set_name(out, "out");
    ggml_set_output(out);
    struct ggml_cgraph *gf = ggml_new_graph(ctx);
    ggml_build_forward_expand(gf, out);

    float *data = malloc(sizeof(float) * N * N);
    for (int i = 0; i < N * N; i++) data[i] = (float) ((i * 7919) % 113) / 113.0f - 0.5f;
    int per_run = -1;
    for (int run = 0; run < RUNS; run++) {
        if (run == FIRST_PROFILED) ggml_backend_sched_set_profiling(sched, true);
        ggml_backend_sched_reset(sched);
        if (!ggml_backend_sched_alloc_graph(sched, gf)) return fail("cannot allocate the graph");
        ggml_backend_tensor_set(x, data, 0, ggml_nbytes(x));
        ggml_backend_tensor_set(w, data, 0, ggml_nbytes(w));
        ggml_backend_tensor_set(b, data, 0, ggml_nbytes(b));
        if (ggml_backend_sched_graph_compute(sched, gf) != GGML_STATUS_SUCCESS) return fail("compute failed");
        float o[N];
        ggml_backend_tensor_get(out, o, 0, sizeof(o));
        float sum = 0;
        for (int i = 0; i < N; i++) sum += o[i];
        if (fabsf(sum - 1.0f) > 1e-3f) return fail("softmax does not sum to 1: the computation changed");

        const ggml_profile_record *recs;
        int n = ggml_backend_sched_get_profiling_records(sched, &recs);
        if (run < FIRST_PROFILED && n != 0) return fail("records before profiling was enabled");
        if (run == FIRST_PROFILED) per_run = n;
        if (run >= FIRST_PROFILED && run <= LAST_PROFILED && n != per_run * (run - FIRST_PROFILED + 1)) {
            return fail("records do not accumulate one compute at a time");
        }
        if (run == LAST_PROFILED) {
            int ops = 0, blas_ops = 0;
            for (int i = 0; i < n; i++) {
                const ggml_profile_record *r = &recs[i];
                if (!r->name || r->end_ns < r->start_ns || r->backend_id < 0 || r->backend_id > 1) {
                    return fail("a record is malformed");
                }
                if (r->type == GGML_PROFILE_EVENT_OP) {
                    ops++;
                    blas_ops += r->backend_id == 0;
                    if (strcmp(r->name, "MUL_MAT") == 0 && (r->ne_src[0][0] != N || r->n_src != 2 || r->bytes != N * N * 4)) {
                        return fail("the MUL_MAT record does not describe the node");
                    }
                }
            }
            printf("records: %d per compute: %d ops: %d blas ops: %d\n", n, per_run, ops, blas_ops);
            ggml_backend_sched_print_profiling(sched);
            if (ggml_backend_sched_export_profiling_json(sched, json) != 0) return fail("cannot write the JSON");
            if (ggml_backend_sched_export_profiling_text(sched, text) != 0) return fail("cannot write the text");
            ggml_backend_sched_reset_profiling(sched);
            if (ggml_backend_sched_get_profiling_records(sched, &recs) != 0) return fail("reset left records");
            ggml_backend_sched_set_profiling(sched, false);
        }
        if (run > LAST_PROFILED && n != 0) return fail("records after profiling was disabled");
    }
    printf("profiling on: %s\n", ggml_backend_sched_get_profiling(sched) ? "yes" : "no");
    free(data);
    ggml_free(ctx);
    ggml_backend_sched_free(sched);
    ggml_backend_free(blas);
    ggml_backend_free(cpu);
    printf("ok\n");
    return 0;
}
