/* Each request of a llama.cpp program (schema/requests.h's rule, the one `rollup --by request` and record's live
 * metrics apply) accounted for: its wall time, its first batch's start to its last batch's end, cut into
 * categories that add up to it, with its time to first token and time per generated token (docs/findings.md,
 * "Per request"). For the accounting (accounting.h): `report` and the HTML page. */
#ifndef GGPROF_REQUEST_TIME_H
#define GGPROF_REQUEST_TIME_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "requests.h"

/* Walks a trace's llama_decode batches (status 0) one sequence's part of one batch at a time, ordered by process,
 * sequence and batch, cut into requests by schema/requests.c's rule: batch(ctx, q, b) after b went on q (q begun
 * by it when q->n_batches is 1; b was a prompt batch of q when !q->generating), done(ctx, q) once q has all its
 * batches. pid < 0: every process. A callback returning non-zero stops the walk with it. Returns 0, or -1 with a
 * one-line reason (a trace without batches), or a callback's value. */
typedef struct {
    int (*batch)(void *ctx, const ggprof_request *q, const ggprof_request_batch *b);
    int (*done)(void *ctx, const ggprof_request *q);
    void *ctx;
} ggprof_request_walker;
int ggprof_requests_walk(sqlite3 *db, int64_t pid, const ggprof_request_walker *w, char *why, size_t why_len);

/* The categories of a request's wall time, in the order they are taken from it. */
enum {
    GGPROF_REQ_PROMPT,         /* the graphs of its prompt batches (its token share of a batch it shared) */
    GGPROF_REQ_GENERATION,     /* the graphs of its one-token decodes (its token share) */
    GGPROF_REQ_GRAPH_BUILD,    /* its batches' llama_decode time outside graphs (its token share) */
    GGPROF_REQ_SHARED,         /* the other requests' token share of the batches it shared with them */
    GGPROF_REQ_OTHER_REQUESTS, /* batches (and graphs) it had no part in, inside its wall */
    GGPROF_REQ_IDLE,           /* the decoding thread blocked outside any batch or graph */
    GGPROF_REQ_HOST,           /* the rest: the decoding thread between batches (sampling, the server's own work) */
    GGPROF_REQ_N_CATS
};
extern const char *const ggprof_req_cat_names[GGPROF_REQ_N_CATS];

typedef struct {
    int64_t seq, first_batch, start_ns, wall_ns;
    int64_t cats[GGPROF_REQ_N_CATS]; /* they sum to wall_ns */
    int64_t n_batches, prompt_tokens, generated_tokens, gen_decodes;
    int64_t ttft_ns;      /* its first batch's start to the end of its first batch with an output; -1: none */
    int64_t per_token_ns; /* from there to its last batch's end, per one-token decode; -1: none */
} ggprof_req_time;

typedef struct {
    ggprof_req_time *v; /* in the order of their first batch */
    size_t           n;
} ggprof_req_times;

/* The requests process pid answered, its thread tid's idle runs as idle. A trace without batches has none.
 * Returns 0, or -1 out of memory. */
int  ggprof_request_times(sqlite3 *db, int32_t pid, int tid, ggprof_req_times *out);
void ggprof_request_times_free(ggprof_req_times *r);
/* The requests as a JSON array of objects ({"seq", "first_batch", "start_ns", "wall_ns", "categories",
 * "prompt_tokens", "generated_tokens", "ttft_ns", "per_token_ns"}; null for -1). */
void ggprof_request_times_json(FILE *out, const ggprof_req_times *r);
/* A table of at most max_rows requests, the longest time to first token first, then a count of the rest; start
 * in seconds from t0; indent before each line. */
void ggprof_request_times_print(FILE *out, const ggprof_req_times *r, int64_t t0, size_t max_rows, const char *indent);

#endif
