/* What a request of a llama.cpp program is, from its llama_decode batches: the one rule that `rollup --by request`
 * and the collector's live metrics (record --metrics) both apply, so that their counts agree. */
#ifndef GGPROF_REQUESTS_H
#define GGPROF_REQUESTS_H

#include <stdint.h>

/* A sequence idle this long between two of its batches (one's end to the next one's start) begins a new request
 * with the next: llama-server decodes every sequence in flight at each step, so a request it is answering is never
 * idle that long; a slot taken again after a pause is a new request even where positions do not tell. */
#define GGPROF_REQUEST_IDLE_NS 1000000000ull

/* One sequence's part of one llama_decode batch (status 0), in the order the process decoded them. */
typedef struct {
    int64_t pid, seq, batch; /* batch: the process's llama_decode call, from 1 */
    int64_t start_ns, duration_ns, n_seqs, n_tokens, pos_min, pos_max; /* pos -1: llama.cpp placed them */
    int     n_outputs;
} ggprof_request_batch;

/* A request: a sequence's batches from a prompt on. */
typedef struct {
    int64_t pid, seq, first_batch, first_ns, last_end_ns;
    int64_t n_batches, max_tokens, prompt_tokens, prompt_ns, gen_decodes, gen_ns, seqs_sum, alone_n, alone_ns, shared_n, shared_ns;
    int     last_out;   /* its last prompt batch asked for an output: the first generated token comes from it */
    int     generating;
    int     placed;     /* its first batch's positions were placed by llama.cpp (pos -1) */
    int64_t last_pos;   /* -1: positions unknown */
} ggprof_request;

/* Generated tokens: those decoded, plus the first, sampled from the prompt's output. */
static inline int64_t ggprof_request_generated(const ggprof_request *q) { return q->gen_decodes + (q->last_out ? 1 : 0); }

/* Whether batch b (of q's process and sequence) goes on q, or begins a new request. */
int  ggprof_request_continues(const ggprof_request *q, const ggprof_request_batch *b);
/* Starts q with b, or adds b to it. */
void ggprof_request_begin(ggprof_request *q, const ggprof_request_batch *b);
void ggprof_request_add(ggprof_request *q, const ggprof_request_batch *b);
/* Whether the program answered q: not the model warm-up of llama.cpp's common_init_from_params (llama-server,
 * llama-completion without --no-warmup): from the process's first llama_decode, batches of BOS and EOS at
 * positions llama.cpp placed, with nothing generated (the memory is cleared after). The program's own request count leaves it out. */
int  ggprof_request_answered(const ggprof_request *q);

#endif
