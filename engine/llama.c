/* llama.cpp's llama_decode and llama_encode (libllama's exported entry points, called through the PLT by
 * llama-server, llama-completion, node-llama-cpp...): one BATCH record per call, with the tokens of each
 * sequence in it, and the graphs computed inside name the call (ggprof_msg_graph.batch). `rollup --by request`
 * joins them into requests.
 * Its set-up and perf calls (the model's load, the context's creation, llama_perf_context_reset,
 * llama_perf_context, listed in schema/llama_regions.h): one REGION record per call, of depth
 * GGPROF_LLAMA_REGION_DEPTH (a program's own regions have depths from 0), named by the function: what the analyzer's
 * accounting measures loading and context set-up by, and computes llama.cpp's own "load time" and "total time"
 * from. */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "engine.h"
#include "internal.h"
#include "llama_regions.h"
#include "reach.h"
#include "timing.h"

/* llama.h's struct llama_batch (passed by value): unchanged from llama.cpp's first releases to v0.4.0 and after. */
struct llama_context;
typedef struct {
    int32_t   n_tokens;
    int32_t  *token;
    float    *embd;
    int32_t  *pos;
    int32_t  *n_seq_id;
    int32_t **seq_id;
    int8_t   *logits;
} ggprof_llama_batch;

GGPROF_API int32_t llama_decode(struct llama_context *ctx, ggprof_llama_batch batch);
GGPROF_API int32_t llama_encode(struct llama_context *ctx, ggprof_llama_batch batch);

__thread uint32_t ggprof_t_batch;
static _Atomic uint32_t g_next_batch = 1;

/* The batch's sequences: tokens, positions, outputs (a NULL seq_id is sequence 0, a NULL logits asks for the
 * last token's, a NULL pos lets llama.cpp place them). */
static void describe(ggprof_msg_batch *m, const ggprof_llama_batch *b) {
    for (int32_t i = 0; i < b->n_tokens; i++) {
        int32_t n = b->seq_id && b->n_seq_id ? b->n_seq_id[i] : 1;
        int     out = b->logits ? b->logits[i] != 0 : i == b->n_tokens - 1;
        int32_t pos = b->pos ? b->pos[i] : -1;
        m->n_outputs += out;
        for (int32_t j = 0; j < n; j++) {
            int32_t sid = b->seq_id && b->n_seq_id ? b->seq_id[i][j] : 0;
            int k = 0, listed = m->n_seqs < GGPROF_MAX_BATCH_SEQS ? m->n_seqs : GGPROF_MAX_BATCH_SEQS;
            while (k < listed && m->seqs[k].seq_id != sid) k++;
            if (k == listed) {
                m->n_seqs++;
                if (k == GGPROF_MAX_BATCH_SEQS) continue; /* counted, not listed */
                m->seqs[k] = (ggprof_batch_seq) { sid, 0, pos, pos, 0, 0 };
            }
            ggprof_batch_seq *s = &m->seqs[k];
            s->n_tokens++;
            s->n_outputs += out;
            if (pos < s->pos_min) s->pos_min = pos;
            if (pos > s->pos_max) s->pos_max = pos;
        }
    }
}

static int32_t traced(int32_t (*real)(struct llama_context *, ggprof_llama_batch), int api, struct llama_context *ctx,
                      ggprof_llama_batch batch) {
    /* Only when a collector records now, and not inside another call (llama_decode never nests; be sure). */
    if (ggprof_t_batch || !ggprof_device_ready() || !ggprof_recording_now() || !ggprof_sink_has_ring()) {
        return real(ctx, batch);
    }
    ggprof_msg_batch m;
    memset(&m, 0, sizeof(m));
    m.h     = (ggprof_msg_hdr){ sizeof(m), GGPROF_MSG_BATCH, 0 };
    m.batch = atomic_fetch_add(&g_next_batch, 1);
    m.api   = api;
    m.n_tokens = batch.n_tokens;
    describe(&m, &batch);
    m.h.size = GGPROF_BATCH_SIZE(ggprof_batch_listed(&m)); /* the message ends after the sequences listed */
    ggprof_t_batch = m.batch;
    m.start_ns     = ggprof_now_ns();
    int32_t rc     = real(ctx, batch);
    m.duration_ns  = ggprof_now_ns() - m.start_ns;
    ggprof_t_batch = 0;
    m.status       = rc;
    GGPROF_GUARD;
    ggprof_emit(&m.h);
    return rc;
}

/* The functions the wrappers forward to: patched where llama.cpp is inside the program (reach.c). */
static void *_Atomic slot_llama_decode, *_Atomic slot_llama_encode;

GGPROF_API int32_t llama_decode(struct llama_context *ctx, ggprof_llama_batch batch) {
    REAL_FROM(slot_llama_decode, llama_decode);
    return traced(real_llama_decode, 0, ctx, batch);
}

GGPROF_API int32_t llama_encode(struct llama_context *ctx, ggprof_llama_batch batch) {
    REAL_FROM(slot_llama_encode, llama_encode);
    return traced(real_llama_encode, 1, ctx, batch);
}

/* ---- The set-up and perf calls: a span each (a REGION record of depth GGPROF_LLAMA_REGION_DEPTH, named by the
 * function), the outermost only (llama_load_model_from_file calls llama_model_load_from_file through the PLT). */
#define GGPROF_LLAMA_SPAN ((uint32_t) GGPROF_LLAMA_REGION_DEPTH) /* unsigned on the wire */
static __thread int t_in_span;

/* The span's start, or 0 when it is not recorded (no collector recording now, or inside another span). */
static uint64_t span_begin(void) {
    if (t_in_span++ || !ggprof_device_ready() || !ggprof_recording_now() || !ggprof_sink_has_ring()) return 0;
    return ggprof_now_ns();
}

static void span_end(const char *name, uint64_t start) {
    t_in_span--;
    if (!start) return;
    ggprof_msg_region m;
    memset(&m, 0, sizeof(m));
    m.h        = (ggprof_msg_hdr){ sizeof(m), GGPROF_MSG_REGION, 0 };
    m.start_ns = start;
    m.end_ns   = ggprof_now_ns();
    m.depth    = GGPROF_LLAMA_SPAN;
    snprintf(m.name, sizeof(m.name), "%s", name);
    GGPROF_GUARD;
    ggprof_emit(&m.h);
}

/* A span's region name: its function's, as schema/llama_regions.h lists it. */
#define SPAN_NAME(fn) #fn

struct llama_model;
static void *_Atomic slot_llama_perf_context_reset;

GGPROF_API void llama_perf_context_reset(struct llama_context *ctx);
GGPROF_API void llama_perf_context_reset(struct llama_context *ctx) {
    REAL_FROM(slot_llama_perf_context_reset, llama_perf_context_reset);
    uint64_t t = span_begin();
    real_llama_perf_context_reset(ctx);
    span_end(SPAN_NAME(llama_perf_context_reset), t);
}
GGPROF_SELF_ALIAS(llama_perf_context_reset)

#if defined(__x86_64__)
/* The calls that take llama_model_params or llama_context_params by value, or return llama_perf_context_data: large
 * structs whose layout changes between llama.cpp versions. The wrappers forward them without knowing it, by the
 * x86-64 System V ABI (docs/how-it-works.md, "llama.cpp's set-up calls"):
 * - a struct of more than 16 bytes is of class MEMORY: the caller copies it onto the stack, in the argument area
 *   just above the return address, after the arguments passed in registers; these calls' other arguments are
 *   pointers and a size_t (registers) and the struct is the last argument, so nothing on the stack follows it. A
 *   wrapper declared with a larger struct (ggprof_llama_params, 512 bytes; v0.4.0's are 80 and 160 bytes and no version
 *   came near) reads the caller's copy, then bytes of the caller's own frame above it (mapped: the stack grows down,
 *   and its top holds the process's or thread's start), never writes them, and passes the whole to the real
 *   function at the same place, which reads its own size of it: the caller's bytes, unchanged;
 * - a struct returned of class MEMORY is written by the callee where a hidden first argument points (%rdi), and
 *   that pointer is returned (%rax): the wrapper takes it as an explicit pointer and hands it on, writing nothing.
 * Other ABIs (AArch64 passes such a struct by reference to a copy of the caller's size, and the return pointer in
 * x8) have no such wrappers: llama.cpp's set-up is then inferred from buffers, as without them. */
typedef struct {
    uint64_t w[64];
} ggprof_llama_params;

GGPROF_API struct llama_model *llama_model_load_from_file(const char *path, ggprof_llama_params params);
GGPROF_API struct llama_model *llama_load_model_from_file(const char *path, ggprof_llama_params params);
GGPROF_API struct llama_model *llama_model_load_from_splits(const char **paths, size_t n_paths, ggprof_llama_params params);
GGPROF_API struct llama_context *llama_init_from_model(struct llama_model *model, ggprof_llama_params params);
GGPROF_API struct llama_context *llama_new_context_with_model(struct llama_model *model, ggprof_llama_params params);
GGPROF_API void *llama_perf_context(void *ret, const struct llama_context *ctx);

static void *_Atomic slot_llama_model_load_from_file, *_Atomic slot_llama_load_model_from_file,
    *_Atomic slot_llama_model_load_from_splits, *_Atomic slot_llama_init_from_model,
    *_Atomic slot_llama_new_context_with_model, *_Atomic slot_llama_perf_context;

#define SPAN_CALL(fn, ...)                                                                                             \
    REAL_FROM(slot_##fn, fn);                                                                                          \
    uint64_t t = span_begin();                                                                                         \
    __typeof__(real_##fn(__VA_ARGS__)) r = real_##fn(__VA_ARGS__);                                                    \
    span_end(SPAN_NAME(fn), t);                                                                                        \
    return r

GGPROF_API struct llama_model *llama_model_load_from_file(const char *path, ggprof_llama_params params) {
    SPAN_CALL(llama_model_load_from_file, path, params);
}
GGPROF_API struct llama_model *llama_load_model_from_file(const char *path, ggprof_llama_params params) {
    SPAN_CALL(llama_load_model_from_file, path, params);
}
GGPROF_API struct llama_model *llama_model_load_from_splits(const char **paths, size_t n_paths, ggprof_llama_params params) {
    SPAN_CALL(llama_model_load_from_splits, paths, n_paths, params);
}
GGPROF_API struct llama_context *llama_init_from_model(struct llama_model *model, ggprof_llama_params params) {
    SPAN_CALL(llama_init_from_model, model, params);
}
GGPROF_API struct llama_context *llama_new_context_with_model(struct llama_model *model, ggprof_llama_params params) {
    SPAN_CALL(llama_new_context_with_model, model, params);
}
GGPROF_API void *llama_perf_context(void *ret, const struct llama_context *ctx) {
    SPAN_CALL(llama_perf_context, ret, ctx);
}

GGPROF_SELF_ALIAS(llama_model_load_from_file)
GGPROF_SELF_ALIAS(llama_load_model_from_file)
GGPROF_SELF_ALIAS(llama_model_load_from_splits)
GGPROF_SELF_ALIAS(llama_init_from_model)
GGPROF_SELF_ALIAS(llama_new_context_with_model)
GGPROF_SELF_ALIAS(llama_perf_context)
/* Generated from schema/llama_regions.h's lists: a call listed there without a wrapper here does not compile. */
#define SPAN_ENTRY(fn, serves) { SPAN_NAME(fn), GGPROF_SELF(fn), &slot_##fn, serves },
#define LOAD_ENTRY(fn)         SPAN_ENTRY(fn, "loading measured")
#define CONTEXT_ENTRY(fn)      SPAN_ENTRY(fn, "context set-up measured")
#define PERF_ENTRY(fn)         SPAN_ENTRY(fn, "llama.cpp's total time")
#define SPAN_ENTRIES                                                                                                   \
    GGPROF_LLAMA_LOAD_CALLS(LOAD_ENTRY) GGPROF_LLAMA_CONTEXT_CALLS(CONTEXT_ENTRY) GGPROF_LLAMA_PERF_CALLS(PERF_ENTRY)
#else
#define SPAN_ENTRIES
#endif

GGPROF_SELF_ALIAS(llama_decode)
GGPROF_SELF_ALIAS(llama_encode)
#define RESET_ENTRY(fn) { SPAN_NAME(fn), GGPROF_SELF(fn), &slot_##fn, "llama.cpp's load and total time" },
static const ggprof_entry g_llama_entries[] = {
    { "llama_decode", GGPROF_SELF(llama_decode), &slot_llama_decode, "llama_decode batches (time per request)" },
    { "llama_encode", GGPROF_SELF(llama_encode), &slot_llama_encode, "llama_encode batches" },
    GGPROF_LLAMA_PERF_RESET_CALLS(RESET_ENTRY)
    SPAN_ENTRIES
};

const ggprof_entry *ggprof_llama_entries(int *n) {
    *n = (int) (sizeof(g_llama_entries) / sizeof(g_llama_entries[0]));
    return g_llama_entries;
}
