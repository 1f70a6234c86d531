/* The rule that cuts a llama.cpp program's llama_decode batches into requests (requests.h). */
#include "requests.h"

#include <string.h>

/* A request is a sequence's batches from a prompt on: it begins where the sequence's positions start again (at 0,
 * or at or before where they were), when llama.cpp placed the positions, with a batch of several tokens after the
 * sequence generated (or a prompt after the warm-up), and after the sequence was idle GGPROF_REQUEST_IDLE_NS. Its prompt is
 * its batches up to the first of one token; the rest is generation, one token decoded a batch. */
/* llama.cpp's warm-up (common_init_from_params; llama-server v0.4.0 decodes it twice): from the process's first
 * llama_decode, batches of its BOS and EOS (or one of them) at positions llama.cpp placed, then the memory cleared,
 * nothing generated. */
static int warmup_shape(const ggprof_request *q) {
    return q->first_batch == 1 && q->placed && q->gen_decodes == 0 && q->max_tokens <= 2;
}

int ggprof_request_continues(const ggprof_request *q, const ggprof_request_batch *b) {
    if (q->pid != b->pid || q->seq != b->seq) return 0;
    if (b->pos_min >= 0 && q->last_pos >= 0 && b->pos_min <= q->last_pos) return 0;
    if (b->pos_min == 0) return 0;
    if (b->pos_min < 0 && b->n_tokens > 1 && (q->generating || (warmup_shape(q) && b->n_tokens > 2))) return 0;
    if (b->start_ns > q->last_end_ns && (uint64_t) (b->start_ns - q->last_end_ns) > GGPROF_REQUEST_IDLE_NS) return 0;
    return 1;
}

void ggprof_request_begin(ggprof_request *q, const ggprof_request_batch *b) {
    memset(q, 0, sizeof(*q));
    q->pid = b->pid, q->seq = b->seq, q->first_batch = b->batch, q->first_ns = b->start_ns, q->last_pos = -1;
    q->placed = b->pos_min < 0;
    ggprof_request_add(q, b);
}

void ggprof_request_add(ggprof_request *q, const ggprof_request_batch *b) {
    if (!q->generating && (b->n_tokens > 1 || q->prompt_tokens == 0)) {
        q->prompt_tokens += b->n_tokens;
        q->prompt_ns += b->duration_ns;
        q->last_out = b->n_outputs > 0;
    } else {
        q->generating = 1;
        q->gen_decodes += b->n_tokens;
        q->gen_ns += b->duration_ns;
        q->seqs_sum += b->n_seqs;
        if (b->n_seqs > 1) {
            q->shared_n++, q->shared_ns += b->duration_ns;
        } else {
            q->alone_n++, q->alone_ns += b->duration_ns;
        }
    }
    q->n_batches++;
    if (b->n_tokens > q->max_tokens) q->max_tokens = b->n_tokens;
    q->last_pos    = b->pos_max;
    q->last_end_ns = b->start_ns + b->duration_ns;
}

int ggprof_request_answered(const ggprof_request *q) {
    return !warmup_shape(q);
}
