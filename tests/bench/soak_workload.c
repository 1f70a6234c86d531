/* The soak benchmark's workload (tests/bench/soak.sh): a llama.cpp program that generates for SECONDS at a steady
 * rate, as a server does, one token per decode with PAUSE_MS between them, starting over with an empty context
 * when it fills. Prints "tokens N" (its decode count) at the end.
 *   soak_workload MODEL SECONDS PAUSE_MS [THREADS] */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "llama.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

static void quiet(enum ggml_log_level level, const char *text, void *user) {
    (void) user;
    if (level == GGML_LOG_LEVEL_ERROR) fputs(text, stderr);
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: soak_workload MODEL SECONDS PAUSE_MS [THREADS]\n");
        return 2;
    }
    double seconds = atof(argv[2]);
    long   pause   = atol(argv[3]);
    int    threads = argc > 4 ? atoi(argv[4]) : 1;
    llama_log_set(quiet, NULL);
    llama_backend_init();
    struct llama_model_params mp = llama_model_default_params();
    struct llama_model *model = llama_model_load_from_file(argv[1], mp);
    if (!model) return fprintf(stderr, "soak_workload: cannot load '%s'\n", argv[1]), 1;
    struct llama_context_params cp = llama_context_default_params();
    cp.n_ctx = 256;
    cp.n_batch = 256;
    cp.n_threads = cp.n_threads_batch = threads;
    struct llama_context *ctx = llama_init_from_model(model, cp);
    if (!ctx) return fprintf(stderr, "soak_workload: cannot make a context\n"), 1;
    const struct llama_vocab *vocab = llama_model_get_vocab(model);
    int n_vocab = llama_vocab_n_tokens(vocab);
    long tokens = 0;
    int  pos = 0;
    llama_token tok = 1;
    struct timespec nap = { pause / 1000, (pause % 1000) * 1000000L };
    double end = now_s() + seconds;
    while (now_s() < end) {
        if (pos >= (int) cp.n_ctx - 1) { /* the context is full: start over, as a server does for a new request */
            llama_memory_clear(llama_get_memory(ctx), true);
            pos = 0;
        }
        if (llama_decode(ctx, llama_batch_get_one(&tok, 1)) != 0) return fprintf(stderr, "soak_workload: decode failed\n"), 1;
        tokens++;
        pos++;
        const float *logits = llama_get_logits_ith(ctx, -1);
        int best = 0;
        for (int i = 1; i < n_vocab; i++) if (logits[i] > logits[best]) best = i;
        tok = best;
        if (pause > 0) nanosleep(&nap, NULL);
    }
    printf("tokens %ld\n", tokens);
    llama_free(ctx);
    llama_model_free(model);
    llama_backend_free();
    return 0;
}
