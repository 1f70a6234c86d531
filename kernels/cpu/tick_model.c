/* The CPU backend's tick rules per ggml release family, and the walk that applies one to a split. */
#include "tick_model.h"

#include "hash.h"

#include <stdlib.h>
#include <string.h>

/* In the order they are tried; the engine keeps the first whose tick counts match what ggml did (cpu_ticks.c).
 * - "fused": llama.cpp b10361 to v0.5.0 and on (ggml 0.23): ggml_graph_compute_thread skips ggml_op_is_empty
 *   and uncomputed nodes, and ggml_cpu_try_fuse_ops computes RMS_NORM+MUL as one node.
 * - "flagged": b8352 (early 2026): the same skips, no fusion.
 * - "every-node": b3889 (October 2024) to b6673: thread 0 calls the callback after every node, empty ones
 *   included (ggml_compute_forward returns early for them, the loop does not skip them). */
const ggprof_tick_model ggprof_tick_models[] = {
    { "fused", true, true, true },
    { "flagged", true, true, false },
    { "every-node", false, false, false },
};
const int ggprof_n_tick_models = (int) (sizeof(ggprof_tick_models) / sizeof(ggprof_tick_models[0]));
_Static_assert(sizeof(ggprof_tick_models) / sizeof(ggprof_tick_models[0]) <= GGPROF_TICK_MODELS_MAX,
               "a bitmask of models must hold them all");

bool ggprof_tick_model_applies(const ggprof_tick_model *m, const ggprof_tick_env *env) {
    return !m->skip_uncomputed || env->has_compute_flag;
}

static const struct ggml_tensor_links *links(const ggprof_tick_env *env, const struct ggml_tensor *t) {
    return ggml_abi_links(t, env->links_off);
}

/* ---- use counts of RMS_NORM nodes (ggml keeps its own in a private part of the graph) ---- */

static uint32_t ptr_hash(const void *p, int cap) {
    uint64_t v = (uint64_t) (uintptr_t) p * 0x9e3779b97f4a7c15ull;
    return (uint32_t) (v >> 32) & (uint32_t) (cap - 1);
}

static void use_counts_for_graph(ggprof_use_counts *u, struct ggml_tensor **nodes, int n) {
    uint64_t h = GGPROF_FNV_OFFSET ^ (uint64_t) n;
    for (int i = 0; i < n; i++) h = ggprof_fnv_step(h, (uint64_t) (uintptr_t) nodes[i]);
    if (h == u->graph_key && u->built) return;
    u->built     = false;
    u->n         = 0;
    u->graph_key = h;
}

static bool use_counts_build(ggprof_use_counts *u, const ggprof_tick_env *env, struct ggml_tensor **nodes, int n) {
    int n_rms = 0;
    for (int i = 0; i < n; i++) n_rms += nodes[i]->op == env->rms_norm;
    int cap = 16;
    while (cap < 2 * n_rms) cap *= 2;
    if (cap > u->cap) {
        const struct ggml_tensor **k = realloc(u->keys, sizeof(*u->keys) * (size_t) cap);
        if (k) u->keys = k;
        int32_t *c = realloc(u->counts, sizeof(*u->counts) * (size_t) cap);
        if (c) u->counts = c;
        if (!k || !c) return false;
        u->cap = cap;
    }
    u->n = cap;
    memset(u->keys, 0, sizeof(*u->keys) * (size_t) cap);
    memset(u->counts, 0, sizeof(*u->counts) * (size_t) cap);
    for (int i = 0; i < n; i++) {
        if (nodes[i]->op != env->rms_norm) continue;
        uint32_t p = ptr_hash(nodes[i], cap);
        while (u->keys[p] && u->keys[p] != nodes[i]) p = (p + 1) & (uint32_t) (cap - 1);
        u->keys[p] = nodes[i];
    }
    /* ggml counts one use per source slot of every node in the graph (ggml_visit_parents_graph). */
    for (int i = 0; i < n; i++) {
        for (int k = 0; k < GGML_ABI_MAX_SRC; k++) {
            const struct ggml_tensor *s = links(env, nodes[i])->src[k];
            if (!s || s->op != env->rms_norm) continue;
            uint32_t p = ptr_hash(s, cap);
            while (u->keys[p] && u->keys[p] != s) p = (p + 1) & (uint32_t) (cap - 1);
            if (u->keys[p] == s) u->counts[p]++;
        }
    }
    u->built = true;
    return true;
}

static int use_count(const ggprof_use_counts *u, const struct ggml_tensor *t) {
    uint32_t p = ptr_hash(t, u->n);
    while (u->keys[p]) {
        if (u->keys[p] == t) return u->counts[p];
        p = (p + 1) & (uint32_t) (u->n - 1);
    }
    return 0;
}

void ggprof_use_counts_free(ggprof_use_counts *uc) {
    free(uc->keys);
    free(uc->counts);
    memset(uc, 0, sizeof(*uc));
}

/* ---- the rules ---- */

static bool ticks_alone(const ggprof_tick_model *m, const ggprof_tick_env *env, const struct ggml_tensor *t) {
    if (m->skip_empty && (t->op == env->none || t->op == env->reshape || t->op == env->view ||
                          t->op == env->permute || t->op == env->transpose)) {
        return false;
    }
    return !(m->skip_uncomputed && !(t->flags & GGML_ABI_FLAG_COMPUTE));
}

/* ggml_cpu_try_fuse_ops: RMS_NORM followed by MUL, all F32, the norm used once and only by the MUL. */
static bool fuses_rms_mul(const ggprof_tick_env *env, struct ggml_tensor **nodes, int n, int i,
                          struct ggml_tensor **graph_nodes, int graph_n, ggprof_use_counts *uc) {
    struct ggml_tensor *node = nodes[i];
    if (node->op != env->rms_norm || i + 1 >= n) return false;
    struct ggml_tensor *mul = nodes[i + 1];
    if (mul->op != env->mul || !(mul->flags & GGML_ABI_FLAG_COMPUTE)) return false;
    const struct ggml_tensor_links *ln = links(env, node), *lm = links(env, mul);
    if (ln->view_src != NULL || (node->flags & GGML_ABI_FLAG_OUTPUT)) return false;
    if (lm->src[0] != node && lm->src[1] != node) return false;
    if (memcmp(mul->ne, node->ne, sizeof(node->ne)) != 0) return false;
    const struct ggml_tensor *w = (lm->src[0] == node) ? lm->src[1] : lm->src[0];
    if (ln->src[0]->type != GGML_ABI_TYPE_F32 || mul->type != GGML_ABI_TYPE_F32 || w->type != GGML_ABI_TYPE_F32 ||
        w->ne[0] != node->ne[0] || w->nb[0] != sizeof(float)) {
        return false;
    }
    if (!uc->built && !use_counts_build(uc, env, graph_nodes, graph_n)) return false;
    return use_count(uc, node) == 1;
}

int ggprof_tick_walk(const ggprof_tick_model *m, const ggprof_tick_env *env, struct ggml_tensor **nodes, int n,
                     struct ggml_tensor **graph_nodes, int graph_n, ggprof_use_counts *uc, ggprof_tick *ticks,
                     uint64_t *hash) {
    bool fusion = m->fuse_rms_mul && !env->fusion_disabled;
    if (fusion) use_counts_for_graph(uc, graph_nodes, graph_n);
    uint64_t h = GGPROF_FNV_OFFSET;
    int      k = 0;
    for (int i = 0; i < n; i++) {
        if (!ticks_alone(m, env, nodes[i])) continue;
        int32_t node = i, fused = -1;
        if (fusion && fuses_rms_mul(env, nodes, n, i, graph_nodes, graph_n, uc)) fused = ++i;
        if (ticks) ticks[k] = (ggprof_tick){ node, fused };
        h = ggprof_fnv_step(h, (uint64_t) (uint32_t) node << 32 | (uint32_t) fused);
        k++;
    }
    if (hash) *hash = h;
    return k;
}

/* What model m does at each node: 0 no tick, 1 ticks, 2 fused into the node before. */
static char *decisions(const ggprof_tick_model *m, const ggprof_tick_env *env, struct ggml_tensor **nodes, int n,
                       struct ggml_tensor **graph_nodes, int graph_n, ggprof_use_counts *uc) {
    ggprof_tick *t = malloc(sizeof(*t) * (size_t) (n > 0 ? n : 1));
    char        *d = calloc((size_t) (n > 0 ? n : 1), 1);
    if (!t || !d) {
        free(t);
        free(d);
        return NULL;
    }
    int k = ggprof_tick_walk(m, env, nodes, n, graph_nodes, graph_n, uc, t, NULL);
    for (int i = 0; i < k; i++) {
        d[t[i].node] = 1;
        if (t[i].fused >= 0) d[t[i].fused] = 2;
    }
    free(t);
    return d;
}

int ggprof_tick_models_part(const ggprof_tick_model *a, const ggprof_tick_model *b, const ggprof_tick_env *env,
                            struct ggml_tensor **nodes, int n, struct ggml_tensor **graph_nodes, int graph_n,
                            ggprof_use_counts *uc) {
    char *da = decisions(a, env, nodes, n, graph_nodes, graph_n, uc);
    char *db = decisions(b, env, nodes, n, graph_nodes, graph_n, uc);
    int   at = -1;
    for (int i = 0; da && db && i < n && at < 0; i++) {
        if (da[i] != db[i]) at = i;
    }
    free(da);
    free(db);
    return at;
}
