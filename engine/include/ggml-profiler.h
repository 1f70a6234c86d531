/* The upstream cross-backend profiler's C API (llama.cpp #21160), implemented by libggprof.so from outside
 * ggml: link with -lggprof ahead of ggml (or preload libggprof.so) and no rebuild of ggml is needed. */
#ifndef GGML_PROFILER_H
#define GGML_PROFILER_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifndef GGML_MAX_NAME
#define GGML_MAX_NAME 64
#endif
#ifndef GGML_MAX_SRC
#define GGML_MAX_SRC 10
#endif
#ifndef GGML_MAX_OP_PARAMS
#define GGML_MAX_OP_PARAMS 64
#endif

typedef struct ggml_backend_sched *ggml_backend_sched_t;

enum ggml_profile_event_type {
    GGML_PROFILE_EVENT_OP,   /* one op's execution */
    GGML_PROFILE_EVENT_COPY, /* a copy between backends */
};

/* The upstream profiler's record, field for field. Strings stay valid for the life of the process. */
typedef struct ggml_profile_record {
    enum ggml_profile_event_type type;
    const char *name;       /* op name ("MUL_MAT") or copy direction ("copy_H2D") */
    int         backend_id; /* the scheduler's backend index */
    int         split_id;
    uint64_t    start_ns, end_ns; /* CLOCK_MONOTONIC, as ggml_profiler_time_ns() */
    uint64_t    bytes;      /* output size (OP) or bytes moved (COPY) */
    const char *extra;      /* fused pair ("RMS_NORM+MUL"), the copied tensor's name, or NULL */
    char        tensor_name[GGML_MAX_NAME];
    int64_t     ne[4];
    int         out_type;   /* ggml_type, -1 if none */
    int         n_src;
    int64_t     ne_src[GGML_MAX_SRC][4];
    int64_t     nb_src[GGML_MAX_SRC][4];
    int         type_src[GGML_MAX_SRC]; /* -1 where absent */
    int32_t     op_params[GGML_MAX_OP_PARAMS / sizeof(int32_t)];
    int         sub_op;     /* ggml_unary_op or ggml_glu_op, -1 if none */
} ggml_profile_record;

/* Turns profiling of one scheduler on or off; off also clears its records (as the upstream profiler does). */
void     ggml_backend_sched_set_profiling(ggml_backend_sched_t sched, bool enable);
bool     ggml_backend_sched_get_profiling(ggml_backend_sched_t sched);
/* Records accumulated since profiling was enabled or last reset; valid until the next reset. */
int      ggml_backend_sched_get_profiling_records(ggml_backend_sched_t sched, const ggml_profile_record **records);
void     ggml_backend_sched_reset_profiling(ggml_backend_sched_t sched);
/* The console summary (on stderr, where ggml logs). */
void     ggml_backend_sched_print_profiling(ggml_backend_sched_t sched);
/* Version-3 JSON and the three-section text report; 0 on success, -1 on error. */
int      ggml_backend_sched_export_profiling_json(ggml_backend_sched_t sched, const char *filepath);
int      ggml_backend_sched_write_profiling_json(ggml_backend_sched_t sched, FILE *fp);
int      ggml_backend_sched_export_profiling_text(ggml_backend_sched_t sched, const char *filepath);
int      ggml_backend_sched_write_profiling_text(ggml_backend_sched_t sched, FILE *fp);
uint64_t ggml_profiler_time_ns(void);

#ifdef __cplusplus
}
#endif

#endif
