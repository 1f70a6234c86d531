// mkmodel: writes a small random-weight llama (dense or MoE) GGUF model so tests and demos need no download.
#include "ggml.h"
#include "gguf.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// Standard deviation of the random matrices: small enough that activations stay
// finite through every layer, large enough that logits are not all equal.
#define WEIGHT_STD 0.02f

// Anything larger is rejected by llama.cpp at load time (LLAMA_MAX_LAYERS, and the
// smallest LLAMA_MAX_EXPERTS of recent releases), so refuse it here with a clear message.
#define MAX_LAYERS  512
#define MAX_EXPERTS 256

struct options {
    const char *vocab;
    const char *out;
    long long n_embd, n_layer, n_head, n_head_kv, n_ff;
    long long n_expert, n_expert_used, n_ctx, seed;
};

static void usage(void)
{
    printf(
        "usage: mkmodel --vocab VOCAB.gguf --out MODEL.gguf [options]\n"
        "Writes a llama-architecture GGUF model with random F16 weights and the\n"
        "tokenizer of VOCAB.gguf (e.g. llama.cpp's models/ggml-vocab-llama-spm.gguf).\n"
        "\n"
        "  --n-embd N         embedding width (default 512)\n"
        "  --n-layer N        number of blocks (default 4)\n"
        "  --n-head N         attention heads (default n-embd/64)\n"
        "  --n-head-kv N      key/value heads, must divide n-head (default n-head/2)\n"
        "  --n-ff N           feed-forward width, per expert for MoE\n"
        "                     (default 2.75*n-embd, half that for MoE, rounded up to 64)\n"
        "  --n-expert N       experts per block; 0 makes a dense model (default 0)\n"
        "  --n-expert-used N  experts routed per token (default min(2, n-expert))\n"
        "  --n-ctx N          training context length (default 2048)\n"
        "  --seed N           PRNG seed; equal seeds give identical files (default 1)\n"
        "  --help             show this help\n");
}

static _Noreturn void bad_arg(const char *flag, long long v, const char *why)
{
    fprintf(stderr, "mkmodel: bad value %lld for %s: %s (see --help)\n", v, flag, why);
    exit(2);
}

static long long parse_int(const char *flag, const char *text, long long min, long long max)
{
    char *end;
    errno = 0;
    const long long v = strtoll(text, &end, 10);
    if (errno != 0 || end == text || *end != '\0' || v < min || v > max) {
        fprintf(stderr, "mkmodel: bad value '%s' for %s (expected an integer in [%lld, %lld])\n",
                text, flag, min, max);
        exit(2);
    }
    return v;
}

static void parse_args(int argc, char **argv, struct options *o)
{
    // 0 means "derive from the other sizes" for the options whose default depends on them.
    *o = (struct options){ .n_embd = 512, .n_layer = 4, .n_ctx = 2048, .seed = 1 };

    const struct {
        const char *flag;
        long long  *dst;
        long long   min, max;
    } ints[] = {
        { "--n-embd",        &o->n_embd,        1, 1 << 16 },
        { "--n-layer",       &o->n_layer,       1, MAX_LAYERS },
        { "--n-head",        &o->n_head,        1, 1 << 12 },
        { "--n-head-kv",     &o->n_head_kv,     1, 1 << 12 },
        { "--n-ff",          &o->n_ff,          1, 1 << 20 },
        { "--n-expert",      &o->n_expert,      0, MAX_EXPERTS },
        { "--n-expert-used", &o->n_expert_used, 1, MAX_EXPERTS },
        { "--n-ctx",         &o->n_ctx,         1, 1 << 24 },
        { "--seed",          &o->seed,          0, LLONG_MAX },
    };

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage();
            exit(0);
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "mkmodel: %s '%s' (see --help)\n",
                    strncmp(a, "--", 2) == 0 ? "missing value for" : "unexpected argument", a);
            exit(2);
        }
        const char *val = argv[++i];
        if (strcmp(a, "--vocab") == 0) {
            o->vocab = val;
            continue;
        }
        if (strcmp(a, "--out") == 0) {
            o->out = val;
            continue;
        }
        size_t k = 0;
        while (k < sizeof ints / sizeof ints[0] && strcmp(a, ints[k].flag) != 0)
            k++;
        if (k == sizeof ints / sizeof ints[0]) {
            fprintf(stderr, "mkmodel: unknown option '%s' (see --help)\n", a);
            exit(2);
        }
        *ints[k].dst = parse_int(a, val, ints[k].min, ints[k].max);
    }

    if (!o->vocab || !o->out) {
        fprintf(stderr, "mkmodel: missing required option %s (see --help)\n", o->vocab ? "--out" : "--vocab");
        exit(2);
    }

    if (o->n_head == 0)
        o->n_head = o->n_embd >= 64 ? o->n_embd / 64 : 1;
    if (o->n_embd % o->n_head != 0)
        bad_arg("--n-head", o->n_head, "does not divide --n-embd");
    // RoPE rotates pairs of dimensions, so an odd head size cannot be rotated whole.
    if ((o->n_embd / o->n_head) % 2 != 0)
        bad_arg("--n-head", o->n_head, "head size n-embd/n-head is odd");

    if (o->n_head_kv == 0)
        o->n_head_kv = o->n_head >= 2 && o->n_head % 2 == 0 ? o->n_head / 2 : o->n_head;
    if (o->n_head % o->n_head_kv != 0)
        bad_arg("--n-head-kv", o->n_head_kv, "does not divide the number of heads");

    if (o->n_expert == 0 && o->n_expert_used != 0)
        bad_arg("--n-expert-used", o->n_expert_used, "needs --n-expert");
    if (o->n_expert > 0 && o->n_expert_used == 0)
        o->n_expert_used = o->n_expert < 2 ? o->n_expert : 2;
    if (o->n_expert_used > o->n_expert)
        bad_arg("--n-expert-used", o->n_expert_used, "exceeds --n-expert");

    // 2.75x is near Llama's SwiGLU width (8/3 x); experts get half of it so that a
    // token's routed FFN work stays close to a dense block's. Multiples of 64 split
    // evenly into ggml's 32-element quantisation blocks if a test quantises the model.
    if (o->n_ff == 0) {
        const long long ff = o->n_expert > 0 ? (11 * o->n_embd + 7) / 8 : (11 * o->n_embd + 3) / 4;
        o->n_ff = (ff + 63) / 64 * 64;
    }
}

// splitmix64: tiny, seedable with any value, and identical on every platform.
static uint64_t next_u64(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

// Uniform on [-sqrt(3)*WEIGHT_STD, sqrt(3)*WEIGHT_STD), which has standard deviation WEIGHT_STD.
static float next_weight(uint64_t *state)
{
    const float u = (float)(next_u64(state) >> 40) * (1.0f / 16777216.0f);
    return (2.0f * u - 1.0f) * 1.7320508f * WEIGHT_STD;
}

static void new_tensor(struct ggml_context *ctx, enum ggml_type type, int il, const char *base,
                       int n_dims, int64_t ne0, int64_t ne1, int64_t ne2)
{
    const int64_t ne[3] = { ne0, ne1, ne2 };
    struct ggml_tensor *t = ggml_new_tensor(ctx, type, n_dims, ne);
    if (il < 0)
        ggml_format_name(t, "%s.weight", base);
    else
        ggml_format_name(t, "blk.%d.%s.weight", il, base);
}

// Names and shapes follow llama_model_llama::load_arch_tensors (src/models/llama.cpp);
// ggml lists the fastest-varying dimension first, so {n_embd, n_vocab} is n_vocab rows.
static void declare_tensors(struct ggml_context *ctx, const struct options *o, int64_t n_vocab)
{
    const int64_t n_embd = o->n_embd;
    const int64_t n_kv   = o->n_embd / o->n_head * o->n_head_kv;
    const int64_t n_ff   = o->n_ff;
    const int64_t n_exp  = o->n_expert;
    const enum ggml_type M = GGML_TYPE_F16, V = GGML_TYPE_F32;

    new_tensor(ctx, M, -1, "token_embd", 2, n_embd, n_vocab, 1);
    new_tensor(ctx, V, -1, "output_norm", 1, n_embd, 1, 1);
    new_tensor(ctx, M, -1, "output", 2, n_embd, n_vocab, 1);

    for (int il = 0; il < (int)o->n_layer; il++) {
        new_tensor(ctx, V, il, "attn_norm", 1, n_embd, 1, 1);
        new_tensor(ctx, M, il, "attn_q", 2, n_embd, n_embd, 1);
        new_tensor(ctx, M, il, "attn_k", 2, n_embd, n_kv, 1);
        new_tensor(ctx, M, il, "attn_v", 2, n_embd, n_kv, 1);
        new_tensor(ctx, M, il, "attn_output", 2, n_embd, n_embd, 1);
        new_tensor(ctx, V, il, "ffn_norm", 1, n_embd, 1, 1);
        if (n_exp == 0) {
            new_tensor(ctx, M, il, "ffn_gate", 2, n_embd, n_ff, 1);
            new_tensor(ctx, M, il, "ffn_up", 2, n_embd, n_ff, 1);
            new_tensor(ctx, M, il, "ffn_down", 2, n_ff, n_embd, 1);
        } else {
            new_tensor(ctx, M, il, "ffn_gate_inp", 2, n_embd, n_exp, 1);
            new_tensor(ctx, M, il, "ffn_gate_exps", 3, n_embd, n_ff, n_exp);
            new_tensor(ctx, M, il, "ffn_up_exps", 3, n_embd, n_ff, n_exp);
            new_tensor(ctx, M, il, "ffn_down_exps", 3, n_ff, n_embd, n_exp);
        }
    }
}

static void set_hparams(struct gguf_context *g, const struct options *o, int64_t n_vocab)
{
    char name[96];
    if (o->n_expert > 0)
        snprintf(name, sizeof name, "mkmodel llama %lldx%lld moe %lldx%lld",
                 o->n_embd, o->n_layer, o->n_expert, o->n_expert_used);
    else
        snprintf(name, sizeof name, "mkmodel llama %lldx%lld", o->n_embd, o->n_layer);

    gguf_set_val_str(g, "general.architecture", "llama");
    gguf_set_val_str(g, "general.name", name);
    // LLAMA_FTYPE_MOSTLY_F16; without it llama.cpp only guesses the type from the tensors.
    gguf_set_val_u32(g, "general.file_type", 1);
    gguf_set_val_u32(g, "llama.vocab_size", (uint32_t)n_vocab);
    gguf_set_val_u32(g, "llama.context_length", (uint32_t)o->n_ctx);
    gguf_set_val_u32(g, "llama.embedding_length", (uint32_t)o->n_embd);
    gguf_set_val_u32(g, "llama.block_count", (uint32_t)o->n_layer);
    gguf_set_val_u32(g, "llama.feed_forward_length", (uint32_t)o->n_ff);
    gguf_set_val_u32(g, "llama.attention.head_count", (uint32_t)o->n_head);
    gguf_set_val_u32(g, "llama.attention.head_count_kv", (uint32_t)o->n_head_kv);
    gguf_set_val_u32(g, "llama.rope.dimension_count", (uint32_t)(o->n_embd / o->n_head));
    gguf_set_val_f32(g, "llama.attention.layer_norm_rms_epsilon", 1e-5f);
    gguf_set_val_f32(g, "llama.rope.freq_base", 10000.0f);
    if (o->n_expert > 0) {
        gguf_set_val_u32(g, "llama.expert_count", (uint32_t)o->n_expert);
        gguf_set_val_u32(g, "llama.expert_used_count", (uint32_t)o->n_expert_used);
    }
}

int main(int argc, char **argv)
{
    struct options o;
    parse_args(argc, argv, &o);

    struct gguf_context *vocab = gguf_init_from_file(o.vocab, (struct gguf_init_params){ .no_alloc = true });
    if (!vocab) {
        fprintf(stderr, "mkmodel: cannot read GGUF file '%s'\n", o.vocab);
        return 1;
    }
    const int64_t tokens = gguf_find_key(vocab, "tokenizer.ggml.tokens");
    if (tokens < 0 || gguf_get_kv_type(vocab, tokens) != GGUF_TYPE_ARRAY
            || gguf_get_arr_type(vocab, tokens) != GGUF_TYPE_STRING) {
        fprintf(stderr, "mkmodel: '%s' has no tokenizer.ggml.tokens string array\n", o.vocab);
        return 1;
    }
    const int64_t n_vocab = (int64_t)gguf_get_arr_n(vocab, tokens);

    // gguf.h only copies whole contexts, so reduce the vocabulary file's own context
    // to its tokenizer.* keys (backwards, as removal shifts later ids) and merge that.
    for (int64_t i = gguf_get_n_kv(vocab) - 1; i >= 0; i--) {
        const char *key = gguf_get_key(vocab, i);
        if (strncmp(key, "tokenizer.", strlen("tokenizer.")) != 0)
            gguf_remove_key(vocab, key);
    }

    struct gguf_context *out = gguf_init_empty();
    set_hparams(out, &o, n_vocab);
    gguf_set_kv(out, vocab);
    gguf_free(vocab);

    // Declare every tensor first, then give them one buffer sized from their real byte counts.
    const size_t n_tensors = 3 + (size_t)o.n_layer * (o.n_expert > 0 ? 10 : 9);
    struct ggml_context *ctx = ggml_init((struct ggml_init_params){
        .mem_size = n_tensors * ggml_tensor_overhead(), .mem_buffer = NULL, .no_alloc = true });
    if (!ctx) {
        fprintf(stderr, "mkmodel: out of memory creating tensors for '%s'\n", o.out);
        return 1;
    }
    declare_tensors(ctx, &o, n_vocab);

    size_t total = 0;
    for (struct ggml_tensor *t = ggml_get_first_tensor(ctx); t; t = ggml_get_next_tensor(ctx, t))
        total += GGML_PAD(ggml_nbytes(t), GGUF_DEFAULT_ALIGNMENT);
    char *data = malloc(total);
    if (!data) {
        fprintf(stderr, "mkmodel: out of memory (%zu bytes of weights) for '%s'\n", total, o.out);
        return 1;
    }

    // One PRNG stream in declaration order keeps the output a pure function of the options.
    uint64_t rng = (uint64_t)o.seed;
    size_t offset = 0;
    for (struct ggml_tensor *t = ggml_get_first_tensor(ctx); t; t = ggml_get_next_tensor(ctx, t)) {
        t->data = data + offset;
        offset += GGML_PAD(ggml_nbytes(t), GGUF_DEFAULT_ALIGNMENT);
        const int64_t n = ggml_nelements(t);
        if (t->type == GGML_TYPE_F32) {
            // RMS-norm scales of 1 leave the normalised activations untouched.
            float *w = t->data;
            for (int64_t i = 0; i < n; i++)
                w[i] = 1.0f;
        } else {
            ggml_fp16_t *w = t->data;
            for (int64_t i = 0; i < n; i++)
                w[i] = ggml_fp32_to_fp16(next_weight(&rng));
        }
        gguf_add_tensor(out, t);
    }

    const bool ok = gguf_write_to_file(out, o.out, false);
    gguf_free(out);
    ggml_free(ctx);
    free(data);
    if (!ok) {
        fprintf(stderr, "mkmodel: cannot write '%s'\n", o.out);
        return 1;
    }
    return 0;
}
