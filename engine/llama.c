/* llama.cpp's llama_decode and llama_encode (libllama's exported entry points, called through the PLT by
 * llama-server, llama-completion, node-llama-cpp...): one BATCH record per call, with the tokens of each
 * sequence in it, and the graphs computed inside name the call (ggprof_msg_graph.batch). `rollup --by request`
 * joins them into requests. */
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "engine.h"
#include "internal.h"
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

GGPROF_SELF_ALIAS(llama_decode)
GGPROF_SELF_ALIAS(llama_encode)
static const ggprof_entry g_llama_entries[] = {
    { "llama_decode", GGPROF_SELF(llama_decode), &slot_llama_decode, "llama_decode batches (time per request)" },
    { "llama_encode", GGPROF_SELF(llama_encode), &slot_llama_encode, "llama_encode batches" },
};

const ggprof_entry *ggprof_llama_entries(int *n) {
    *n = (int) (sizeof(g_llama_entries) / sizeof(g_llama_entries[0]));
    return g_llama_entries;
}
