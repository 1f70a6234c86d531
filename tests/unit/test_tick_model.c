/* Unit tests of the CPU tick models (kernels/cpu/tick_model.c) on hand-built graphs: which nodes tick under each
 * model, each condition of the RMS_NORM+MUL fusion, where two models part, and both tensor layouts. */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "tick_model.h"

/* ggml 0.23's op ids; the models only compare them with the env's. */
enum { NONE = 0, ADD = 2, MUL = 7, RMS_NORM = 25, MUL_MAT = 29, RESHAPE = 36, VIEW = 37, PERMUTE = 38, TRANSPOSE = 39,
       GET_ROWS = 40, SOFT_MAX = 44 };
enum { F32 = 0, F16 = 1 };
#define COMPUTE 16
#define OUTPUT  2

#define MAX_NODES 16
static _Alignas(16) char g_mem[MAX_NODES + 2][GGML_ABI_TENSOR_MAX];
static struct ggml_tensor *g_nodes[MAX_NODES];
static int                 g_n;
static ggprof_tick_env     g_env;

static struct ggml_tensor_links *links_of(struct ggml_tensor *t) {
    return (struct ggml_tensor_links *) ((char *) t + g_env.links_off);
}

static struct ggml_tensor *tensor(int slot, int op, int type, int64_t ne0, int flags) {
    struct ggml_tensor *t = (struct ggml_tensor *) g_mem[slot];
    memset(t, 0, GGML_ABI_TENSOR_MAX);
    t->op    = op;
    t->type  = type;
    t->ne[0] = ne0;
    t->ne[1] = t->ne[2] = t->ne[3] = 1;
    t->nb[0] = type == F16 ? 2 : 4;
    t->flags = flags;
    return t;
}

static struct ggml_tensor *node(int op, int type, int flags, struct ggml_tensor *a, struct ggml_tensor *b) {
    struct ggml_tensor *t = tensor(g_n, op, type, 64, flags);
    links_of(t)->src[0] = a;
    links_of(t)->src[1] = b;
    g_nodes[g_n++] = t;
    return t;
}

/* The graph of every rule: 0 GET_ROWS; 1 RMS_NORM + 2 MUL (fusable); 3 VIEW, 4 RESHAPE (empty); 5 MUL_MAT;
 * 6 RMS_NORM used twice (7 MUL, 8 ADD): not fused; 9 ADD without the compute flag; 10 RMS_NORM + 11 MUL whose
 * weight is F16: not fused. */
static struct ggml_tensor *g_w32, *g_w16;
static void build(size_t links_off) {
    memset(&g_env, 0, sizeof(g_env));
    g_env = (ggprof_tick_env){ NONE, RESHAPE, VIEW, PERMUTE, TRANSPOSE, RMS_NORM, MUL, links_off, true, false };
    g_n   = 0;
    g_w32 = tensor(MAX_NODES, NONE, F32, 64, 0);
    g_w16 = tensor(MAX_NODES + 1, NONE, F16, 64, 0);
    struct ggml_tensor *in = node(GET_ROWS, F32, COMPUTE, g_w32, NULL);
    struct ggml_tensor *n1 = node(RMS_NORM, F32, COMPUTE, in, NULL);
    struct ggml_tensor *m1 = node(MUL, F32, COMPUTE, n1, g_w32);
    struct ggml_tensor *v  = node(VIEW, F32, COMPUTE, m1, NULL);
    struct ggml_tensor *r  = node(RESHAPE, F32, COMPUTE, v, NULL);
    struct ggml_tensor *mm = node(MUL_MAT, F32, COMPUTE, g_w32, r);
    struct ggml_tensor *n2 = node(RMS_NORM, F32, COMPUTE, mm, NULL);
    node(MUL, F32, COMPUTE, n2, g_w32);
    struct ggml_tensor *a2 = node(ADD, F32, COMPUTE, n2, mm);
    node(ADD, F32, 0, a2, a2);
    struct ggml_tensor *n3 = node(RMS_NORM, F32, COMPUTE, a2, NULL);
    node(MUL, F32, COMPUTE, n3, g_w16);
}

static const ggprof_tick_model *model(const char *name) {
    for (int i = 0; i < ggprof_n_tick_models; i++) {
        if (strcmp(ggprof_tick_models[i].name, name) == 0) return &ggprof_tick_models[i];
    }
    return NULL;
}

static int walk(const char *name, ggprof_tick *ticks, uint64_t *hash) {
    ggprof_use_counts uc;
    memset(&uc, 0, sizeof(uc));
    int k = ggprof_tick_walk(model(name), &g_env, g_nodes, g_n, g_nodes, g_n, &uc, ticks, hash);
    ggprof_use_counts_free(&uc);
    return k;
}

static int part(const char *a, const char *b) {
    ggprof_use_counts uc;
    memset(&uc, 0, sizeof(uc));
    int at = ggprof_tick_models_part(model(a), model(b), &g_env, g_nodes, g_n, g_nodes, g_n, &uc);
    ggprof_use_counts_free(&uc);
    return at;
}

static void check_models(void) {
    ggprof_tick t[MAX_NODES];
    uint64_t    h_every, h_flagged, h_fused;
    CHECK(model("every-node") && model("flagged") && model("fused"));
    CHECK_EQ_INT(walk("every-node", t, &h_every), 12);
    for (int i = 0; i < 12; i++) CHECK(t[i].node == i && t[i].fused == -1);
    /* flagged: not the VIEW, the RESHAPE, the unflagged ADD. */
    CHECK_EQ_INT(walk("flagged", t, &h_flagged), 9);
    int flagged[] = { 0, 1, 2, 5, 6, 7, 8, 10, 11 };
    for (int i = 0; i < 9; i++) CHECK_EQ_INT(t[i].node, flagged[i]);
    /* fused: as flagged, the first RMS_NORM+MUL one tick; the norm used twice and the F16 weight do not fuse. */
    CHECK_EQ_INT(walk("fused", t, &h_fused), 8);
    CHECK_EQ_INT(t[1].node, 1);
    CHECK_EQ_INT(t[1].fused, 2);
    for (int i = 0; i < 8; i++) CHECK(i == 1 || t[i].fused == -1);
    CHECK(h_every != h_flagged && h_flagged != h_fused && h_every != h_fused);
}

static void check_part(void) {
    CHECK_EQ_INT(part("fused", "flagged"), 2);    /* the MUL: fused into the norm, or a tick of its own */
    CHECK_EQ_INT(part("flagged", "every-node"), 3); /* the VIEW */
    CHECK_EQ_INT(part("fused", "fused"), -1);
}

static void check_fusion_conditions(void) {
    /* GGML_CPU_DISABLE_FUSION=1: fused reads as flagged. */
    uint64_t a, b;
    g_env.fusion_disabled = true;
    CHECK_EQ_INT(walk("fused", NULL, &a), 9);
    walk("flagged", NULL, &b);
    CHECK(a == b);
    g_env.fusion_disabled = false;
    /* A norm flagged OUTPUT is kept: no fusion. */
    g_nodes[1]->flags |= OUTPUT;
    CHECK_EQ_INT(walk("fused", NULL, NULL), 9);
    g_nodes[1]->flags &= ~OUTPUT;
    /* A MUL of another shape, or one that does not read the norm: no fusion. */
    g_nodes[2]->ne[0] = 32;
    CHECK_EQ_INT(walk("fused", NULL, NULL), 9);
    g_nodes[2]->ne[0] = 64;
    links_of(g_nodes[2])->src[0] = g_w32;
    CHECK_EQ_INT(walk("fused", NULL, NULL), 9);
    links_of(g_nodes[2])->src[0] = g_nodes[1];
    /* A ggml without the compute flag: the flagged models do not apply. */
    g_env.has_compute_flag = false;
    CHECK(!ggprof_tick_model_applies(model("fused"), &g_env));
    CHECK(!ggprof_tick_model_applies(model("flagged"), &g_env));
    CHECK(ggprof_tick_model_applies(model("every-node"), &g_env));
    g_env.has_compute_flag = true;
    CHECK_EQ_INT(walk("fused", NULL, NULL), 8);
}

static void test_ggml_0_23_layout(void) {
    build(GGML_ABI_LINKS_OFFSET);
    check_models();
    check_part();
    check_fusion_conditions();
}

/* Releases up to late 2024 keep a grad pointer before the sources: the same graph reads the same. */
static void test_grad_layout(void) {
    build(GGML_ABI_LINKS_OFFSET + sizeof(void *));
    check_models();
    check_part();
    check_fusion_conditions();
}

int main(void) {
    int failures = 0;
    RUN(test_ggml_0_23_layout);
    RUN(test_grad_layout);
    return failures ? 1 : 0;
}
