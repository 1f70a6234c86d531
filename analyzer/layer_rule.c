/* The layer and block rules (layer_rule.h): read from a tensor's name (and op), below the model and the views. */
#include "layer_rule.h"

#include <stddef.h>
#include <string.h>

/* The part of a tensor name that says what it is: the scheduler names its copies "BACKEND#name#N", and
 * ggml appends " (view)", " (permuted)", " (reshaped)", ... to the name of what a view derives from. */
static size_t base_name(const char *name, const char **start) {
    const char *s = name, *hash = strchr(name, '#');
    if (hash && strchr(hash + 1, '#')) s = hash + 1;
    const char *e = s + strlen(s);
    const char *h2 = memchr(s, '#', (size_t) (e - s));
    if (h2) e = h2;
    while (e > s && e[-1] == ')') {
        const char *p = e - 1;
        while (p > s && *p != '(') p--;
        if (p <= s || p[-1] != ' ') break;
        e = p - 1;
    }
    *start = s;
    return (size_t) (e - s);
}

static int digits_value(const char *p, const char *e) {
    if (p >= e || e - p > 6) return -1;
    int v = 0;
    for (; p < e; p++) {
        if (*p < '0' || *p > '9') return -1;
        v = v * 10 + (*p - '0');
    }
    return v;
}

int ggprof_layer_of(const char *name) {
    if (!name || !*name) return -1;
    /* GGUF weights: "blk.3.attn_q.weight" (and the views and copies made of them). */
    const char *blk = strstr(name, "blk.");
    if (blk && (blk == name || blk[-1] == '#' || blk[-1] == ' ')) {
        const char *d = blk + 4, *e = d;
        while (*e >= '0' && *e <= '9') e++;
        if (*e == '.') {
            int v = digits_value(d, e);
            if (v >= 0) return v;
        }
    }
    const char *s;
    size_t n = base_name(name, &s);
    const char *e = s + n, *d = e;
    while (d > s && d[-1] >= '0' && d[-1] <= '9') d--;
    if (d == e) return -1;
    /* llama.cpp's graph callback names a layer's tensors "name-IL" (cb(cur, "Qcur", il)). */
    if (d - s >= 2 && d[-1] == '-') return digits_value(d, e);
    /* Its KV cache is "cache_k_l3" / "cache_v_l3"; a SET_ROWS into it writes "cache_k_l3 (view)". */
    if (n > 6 && strncmp(s, "cache_", 6) == 0 && d - s >= 8 && d[-1] == 'l' && d[-2] == '_') return digits_value(d, e);
    return -1;
}

static int starts(const char *s, size_t n, const char *prefix) {
    size_t p = strlen(prefix);
    return n >= p && strncmp(s, prefix, p) == 0;
}

static int contains(const char *s, size_t n, const char *needle) {
    size_t k = strlen(needle);
    for (size_t i = 0; i + k <= n; i++) {
        if (strncmp(s + i, needle, k) == 0) return 1;
    }
    return 0;
}

static int is_op(const char *op, const char *const *list) {
    for (; op && *list; list++) {
        if (strcmp(op, *list) == 0) return 1;
    }
    return 0;
}

/* Order matters: MoE before norm (ffn_moe_weights_norm), norm before output (result_norm), and names before
 * ops only where the name is more specific (a SOFT_MAX named ffn_moe_probs is MoE routing, not attention). */
const char *ggprof_block_of(int type, const char *op, const char *tensor_name) {
    if (type == 1) return "copy";
    if (type == 2) return "sync";
    static const char *const norm_ops[] = { "RMS_NORM", "NORM", "GROUP_NORM", "L2_NORM", NULL };
    static const char *const attn_ops[] = { "FLASH_ATTN_EXT", "SOFT_MAX", "ROPE", NULL };
    static const char *const attn_names[] = { "Qcur", "Kcur", "Vcur", "kq", "attn_", "cache_k", "cache_v",
                                              "q_", "k_", "v_", "kv_", "wo", NULL };
    const char *s = "";
    size_t n = tensor_name ? base_name(tensor_name, &s) : 0;
    if ((op && strcmp(op, "MUL_MAT_ID") == 0) || starts(s, n, "ffn_moe") || contains(s, n, "_exps") ||
        contains(s, n, "_shexp")) {
        return "moe";
    }
    if (is_op(op, norm_ops) || contains(s, n, "norm")) return "norm";
    if (starts(s, n, "result_") || (n == 6 && strncmp(s, "output", 6) == 0) || starts(s, n, "output.")) return "output";
    if (starts(s, n, "inp_") || (n == 4 && strncmp(s, "embd", 4) == 0) || starts(s, n, "token_embd")) return "input";
    if (is_op(op, attn_ops)) return "attention";
    for (const char *const *p = attn_names; *p; p++) {
        if (starts(s, n, *p)) return "attention";
    }
    /* A single letter q, k or v, possibly with a layer: "q-3". */
    if ((n == 1 || (n > 2 && s[1] == '-')) && (s[0] == 'q' || s[0] == 'k' || s[0] == 'v')) return "attention";
    if (starts(s, n, "ffn_") || contains(s, n, ".ffn_")) return "ffn";
    if (contains(s, n, ".attn_")) return "attention";
    return "other";
}
