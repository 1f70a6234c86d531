/* Unit tests of the roofline model: bytes and FLOPs of each op against hand-computed cases, and the roofs. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "harness.h"
#include "output.h"
#include "roofline.h"

/* ggml 0.23's ids, as the traces of the samples carry them. */
enum { F32 = 0, F16 = 1, Q4_0 = 2, Q6_K = 14, I32 = 26, I64 = 27 };

static ggprof_rl_types g_types;

static ggprof_rl_node node(const char *op, int out_type, const int64_t ne[4]) {
    ggprof_rl_node n;
    memset(&n, 0, sizeof(n));
    snprintf(n.op, sizeof(n.op), "%s", op);
    n.out_type = out_type;
    memcpy(n.ne, ne, sizeof(n.ne));
    for (int i = 0; i < GGPROF_RL_MAX_SRC; i++) n.type_src[i] = -1;
    return n;
}

static void src(ggprof_rl_node *n, int type, int64_t a, int64_t b, int64_t c, int64_t d) {
    int i = n->n_src++;
    n->type_src[i]  = type;
    n->ne_src[i][0] = a, n->ne_src[i][1] = b, n->ne_src[i][2] = c, n->ne_src[i][3] = d;
}

#define CHECK_COST(c, flops_, read_, written_)                                                                 \
    do {                                                                                                       \
        CHECK((c).flops_known && (c).bytes_known);                                                             \
        CHECK_EQ_INT((c).flops, (flops_));                                                                     \
        CHECK_EQ_INT((c).bytes_read, (read_));                                                                 \
        CHECK_EQ_INT((c).bytes_written, (written_));                                                           \
    } while (0)

static void test_types_builtin(void) {
    CHECK_EQ_INT(g_types.type_size[Q4_0], 18);
    CHECK_EQ_INT(g_types.blck_size[Q4_0], 32);
    CHECK_EQ_INT(g_types.type_size[Q6_K], 210);
    CHECK_EQ_INT(g_types.blck_size[Q6_K], 256);
    CHECK(strcmp(g_types.name[F16], "f16") == 0);
    CHECK_EQ_INT(g_types.type_size[4], 0); /* Q4_2, removed from ggml: unknown */
    int64_t ts = 0, bs = 0;
    CHECK(ggprof_rl_type_by_name("q8_0", &ts, &bs) == 0);
    CHECK_EQ_INT(ts, 34);
    CHECK_EQ_INT(bs, 32);
    CHECK(ggprof_rl_type_by_name("q4_2", &ts, &bs) != 0);
}

/* Decode step of a 4096 x 4096 F16 projection on 2 tokens. */
static void test_mul_mat_f16(void) {
    ggprof_rl_node n = node("MUL_MAT", F32, (int64_t[4]){ 4096, 2, 1, 1 });
    src(&n, F16, 4096, 4096, 1, 1);
    src(&n, F32, 4096, 2, 1, 1);
    ggprof_rl_cost c;
    ggprof_rl_cost_of(&n, &g_types, &c);
    /* 2 * K * M * N = 2 * 4096 * 4096 * 2; weights 4096*4096*2 B, activations 4096*2*4 B, output 4096*2*4 B. */
    CHECK_COST(c, 67108864, 33554432 + 32768, 32768);
    CHECK(c.f16);
}

/* The Q4_0 sample's ffn_gate: [512, 1408] q4_0 weights (18-byte blocks of 32), 2 tokens. */
static void test_mul_mat_q4_0(void) {
    ggprof_rl_node n = node("MUL_MAT", F32, (int64_t[4]){ 1408, 2, 1, 1 });
    src(&n, Q4_0, 512, 1408, 1, 1);
    src(&n, F32, 512, 2, 1, 1);
    ggprof_rl_cost c;
    ggprof_rl_cost_of(&n, &g_types, &c);
    /* 512 * 1408 / 32 * 18 = 405504 (the trace's nb[2] of that tensor), + 512*2*4; out 1408*2*4. */
    CHECK_COST(c, 2 * 512 * 1408 * 2, 405504 + 4096, 11264);
    CHECK(!c.f16);
}

/* A batched product: src0 [K, M, 4 heads] against src1 [K, N, 4]: every head multiplies. */
static void test_mul_mat_batched(void) {
    ggprof_rl_node n = node("MUL_MAT", F32, (int64_t[4]){ 32, 8, 4, 1 });
    src(&n, F32, 64, 32, 4, 1);
    src(&n, F32, 64, 8, 4, 1);
    ggprof_rl_cost c;
    ggprof_rl_cost_of(&n, &g_types, &c);
    CHECK_COST(c, 2 * 64 * 32 * 8 * 4, (64 * 32 * 4 + 64 * 8 * 4) * 4, 32 * 8 * 4 * 4);
}

/* The MoE sample's ffn_moe_gate: src0 [256, 384, 8 experts] f16, src1 [256, 1, n_tokens], ids [2 used, n_tokens]. */
static void test_mul_mat_id(void) {
    ggprof_rl_node n = node("MUL_MAT_ID", F32, (int64_t[4]){ 384, 2, 1, 1 });
    src(&n, F16, 256, 384, 8, 1);
    src(&n, F32, 256, 1, 1, 1);
    src(&n, I32, 2, 1, 1, 1);
    ggprof_rl_cost c;
    ggprof_rl_cost_of(&n, &g_types, &c);
    /* One token, 2 experts used: 2 of the 8 experts' weights (256*384*2 B each); FLOPs 2 * K * (M * 2). */
    CHECK_COST(c, 2 * 256 * 384 * 2, 2 * 256 * 384 * 2 + 256 * 4 + 2 * 4, 384 * 2 * 4);

    /* 16 tokens x 2 used = 32 > 8: the bound is every expert, read once. */
    ggprof_rl_node m = node("MUL_MAT_ID", F32, (int64_t[4]){ 384, 2, 16, 1 });
    src(&m, F16, 256, 384, 8, 1);
    src(&m, F32, 256, 1, 16, 1);
    src(&m, I32, 2, 16, 1, 1);
    ggprof_rl_cost_of(&m, &g_types, &c);
    CHECK_COST(c, 2.0 * 256 * 384 * 2 * 16, 8 * 256 * 384 * 2 + 256 * 16 * 4 + 2 * 16 * 4, 384 * 2 * 16 * 4);
}

/* The samples' attention: q [64, 2 tokens, 8 heads], k and v [64, 256 cells, 4 kv heads] f16, mask [256, 2]. */
static void test_flash_attn_ext(void) {
    ggprof_rl_node n = node("FLASH_ATTN_EXT", F32, (int64_t[4]){ 64, 8, 2, 1 });
    src(&n, F32, 64, 2, 8, 1);
    src(&n, F16, 64, 256, 4, 1);
    src(&n, F16, 64, 256, 4, 1);
    src(&n, F16, 256, 2, 1, 1);
    ggprof_rl_cost c;
    ggprof_rl_cost_of(&n, &g_types, &c);
    /* scores = n_kv * n_q * heads = 256 * 2 * 8 = 4096: Q.K^T 2*64*4096, .V 2*64*4096, softmax 5*4096.
     * Bytes: q 64*2*8*4, k and v 64*256*4*2 each (the whole cache view, masked cells too), mask 256*2*2. */
    CHECK_COST(c, 524288 + 524288 + 20480, 4096 + 131072 + 131072 + 1024, 4096);
    CHECK(c.f16);
}

static void test_add(void) {
    ggprof_rl_node n = node("ADD", F32, (int64_t[4]){ 512, 2, 1, 1 });
    src(&n, F32, 512, 2, 1, 1);
    src(&n, F32, 512, 2, 1, 1);
    ggprof_rl_cost c;
    ggprof_rl_cost_of(&n, &g_types, &c);
    CHECK_COST(c, 1024, 8192, 4096);
}

static void test_rms_norm(void) {
    ggprof_rl_node n = node("RMS_NORM", F32, (int64_t[4]){ 512, 2, 1, 1 });
    src(&n, F32, 512, 2, 1, 1);
    ggprof_rl_cost c;
    ggprof_rl_cost_of(&n, &g_types, &c);
    CHECK_COST(c, 3 * 1024, 4096, 4096);
    /* Fused with the MUL by the norm weight: one more FLOP per element, the weight row (512 F32) read, and the
     * norm's own output never written. */
    snprintf(n.fused, sizeof(n.fused), "RMS_NORM+MUL");
    ggprof_rl_cost_of(&n, &g_types, &c);
    CHECK_COST(c, 4 * 1024, 4096 + 2048, 4096);
}

/* The Q4_0 sample's token embedding: 2 rows gathered from a [512, 32000] q4_0 table. */
static void test_get_rows_quantized(void) {
    ggprof_rl_node n = node("GET_ROWS", F32, (int64_t[4]){ 512, 2, 1, 1 });
    src(&n, Q4_0, 512, 32000, 1, 1);
    src(&n, I32, 2, 1, 1, 1);
    ggprof_rl_cost c;
    ggprof_rl_cost_of(&n, &g_types, &c);
    /* The rows gathered, not the table: 2 * 512 / 32 * 18 = 576 B, + the ids; 0 FLOPs. */
    CHECK_COST(c, 0, 576 + 8, 4096);
}

/* KV-cache store: 2 rows of 128 F32 into an F16 cache [128, 2048] through I64 ids; the cache is not read. */
static void test_set_rows_and_cpy(void) {
    ggprof_rl_node n = node("SET_ROWS", F16, (int64_t[4]){ 128, 2048, 1, 1 });
    src(&n, F32, 128, 2, 1, 1);
    src(&n, I64, 2, 1, 1, 1);
    src(&n, F16, 128, 2048, 1, 1);
    ggprof_rl_cost c;
    ggprof_rl_cost_of(&n, &g_types, &c);
    CHECK_COST(c, 0, 1024 + 16, 512);

    ggprof_rl_node m = node("CPY", F16, (int64_t[4]){ 64, 4, 1, 1 });
    src(&m, F32, 64, 4, 1, 1);
    src(&m, F16, 64, 4, 1, 1);
    ggprof_rl_cost_of(&m, &g_types, &c);
    CHECK_COST(c, 0, 1024, 512);
}

static void test_rope_softmax_glu(void) {
    ggprof_rl_node n = node("ROPE", F32, (int64_t[4]){ 64, 8, 2, 1 });
    src(&n, F32, 64, 8, 2, 1);
    src(&n, I32, 2, 1, 1, 1);
    n.op_params[1] = 32; /* n_dims: half of each row rotates */
    ggprof_rl_cost c;
    ggprof_rl_cost_of(&n, &g_types, &c);
    CHECK_COST(c, 3 * 1024 / 2, 4096 + 8, 4096);

    ggprof_rl_node s = node("SOFT_MAX", F32, (int64_t[4]){ 8, 2, 1, 1 });
    src(&s, F32, 8, 2, 1, 1);
    ggprof_rl_cost_of(&s, &g_types, &c);
    CHECK_COST(c, 5 * 16, 64, 64);

    ggprof_rl_node g = node("GLU", F32, (int64_t[4]){ 1408, 2, 1, 1 });
    src(&g, F32, 1408, 2, 1, 1);
    src(&g, F32, 1408, 2, 1, 1);
    snprintf(g.sub_op, sizeof(g.sub_op), "SWIGLU");
    ggprof_rl_cost_of(&g, &g_types, &c);
    CHECK_COST(c, 5 * 2816, 2 * 11264, 11264);
}

/* A JSON profile names no sub-op: its id is read as ggml 0.23 numbers them (GLU 2 = SWIGLU, UNARY 10 = SILU). */
static void test_node_from_text(void) {
    ggprof_rl_node n;
    ggprof_rl_node_from_text(&n, "GLU", NULL, "", 2, "[1408, 2, 1, 1]", F32, 2,
                             "[[1408, 2, 1, 1], [1408, 2, 1, 1]]", "[0, 0]", "[2, 0, 0, 0]");
    CHECK(strcmp(n.sub_op, "SWIGLU") == 0);
    CHECK_EQ_INT(n.ne[0], 1408);
    CHECK_EQ_INT(n.ne_src[1][1], 2);
    CHECK_EQ_INT(n.type_src[1], 0);
    CHECK_EQ_INT(n.type_src[2], -1);
    CHECK_EQ_INT(n.op_params[0], 2);
    ggprof_rl_node_from_text(&n, "UNARY", NULL, NULL, 10, "[4, 1, 1, 1]", F32, 1, "[[4, 1, 1, 1]]", "[0]", NULL);
    CHECK(strcmp(n.sub_op, "SILU") == 0);
    char shape[160];
    ggprof_rl_node_from_text(&n, "MUL_MAT", NULL, NULL, -1, "[1408, 2, 1, 1]", F32, 2,
                             "[[512, 1408, 1, 1], [512, 2, 1, 1]]", "[2, 0]", NULL);
    ggprof_rl_shape(shape, sizeof(shape), &n, &g_types);
    CHECK(strcmp(shape, "q4_0[512,1408] f32[512,2]") == 0);
}

static void test_unknown(void) {
    ggprof_rl_node n = node("SSM_SCAN", F32, (int64_t[4]){ 16, 1, 1, 1 });
    src(&n, F32, 16, 1, 1, 1);
    ggprof_rl_cost c;
    ggprof_rl_cost_of(&n, &g_types, &c);
    CHECK(!c.flops_known);
    CHECK(c.bytes_known);
    CHECK_EQ_INT(c.bytes_read, 64);
    ggprof_rl_node m = node("ADD", F32, (int64_t[4]){ 16, 1, 1, 1 });
    src(&m, 4, 16, 1, 1, 1); /* an id ggml 0.23 does not have */
    ggprof_rl_cost_of(&m, &g_types, &c);
    CHECK(!c.bytes_known);
}

static void test_roofs(void) {
    ggprof_roofs r = { .n = 0 };
    char why[256];
    CHECK(ggprof_roof_parse(&r, "CPU=20,100", why, sizeof(why)) == 0);
    CHECK(ggprof_roof_parse(&r, "CUDA0=3000,60000,400000", why, sizeof(why)) == 0);
    CHECK(ggprof_roof_parse(&r, "cpu=25,100,80", why, sizeof(why)) == 0); /* replaces CPU */
    CHECK_EQ_INT(r.n, 2);
    const ggprof_roof *cpu = ggprof_roofs_find(&r, "CPU");
    CHECK(cpu && cpu->gbps == 25 && cpu->gflops == 100 && cpu->gflops_f16 == 80);
    CHECK(ggprof_roofs_find(&r, "Vulkan0") == NULL);
    static const char *const bad[] = { "CPU", "=1,2", "CPU=20", "CPU=x,2", "CPU=20,0", "CPU=-1,5", "CPU=1,2,3,4",
                                       "CPU=1,,2" };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        why[0] = '\0';
        CHECK(ggprof_roof_parse(&r, bad[i], why, sizeof(why)) != 0);
        CHECK(strstr(why, bad[i]) != NULL); /* the message names the bad value */
    }
    /* Time at the roof: max(bytes / bandwidth, flops / peak), in ns (GB/s = bytes per ns). */
    ggprof_rl_cost c = { .flops = 1e6, .bytes_read = 1e6, .bytes_written = 0, .flops_known = 1, .bytes_known = 1 };
    CHECK(fabs(ggprof_rl_roof_ns(cpu, &c) - 40000.0) < 1e-6); /* memory: 1e6 / 25 */
    c.flops = 1e8;
    CHECK(fabs(ggprof_rl_roof_ns(cpu, &c) - 1e6) < 1e-6); /* compute: 1e8 / 100 */
    c.f16 = 1;
    CHECK(fabs(ggprof_rl_roof_ns(cpu, &c) - 1.25e6) < 1e-6); /* the F16 roof: 1e8 / 80 */
    c.bytes_known = 0;
    CHECK(ggprof_rl_roof_ns(cpu, &c) == 0);
}

static void test_output(void) {
    static const ggprof_col cols[] = { { "op", "op", NULL, GGPROF_COL_FLEX },
                                       { "GB/s", "gbps", "%.2f", 0 },
                                       { "n", "n", NULL, 0 },
                                       { "x", "detail", NULL, GGPROF_COL_NO_TABLE } };
    ggprof_table t;
    ggprof_table_init(&t, cols, 4);
    ggprof_table_text(&t, "say \"hi\",\n\x01");
    ggprof_table_real(&t, 1.5);
    ggprof_table_int(&t, 7);
    ggprof_table_text(&t, "d");
    ggprof_table_text(&t, "MUL_MAT");
    ggprof_table_real(&t, NAN);
    ggprof_table_null(&t);
    ggprof_table_text(&t, NULL);
    CHECK_EQ_INT(ggprof_table_rows(&t), 2);
    char buf[1024];
    FILE *f = fmemopen(buf, sizeof(buf), "w");
    CHECK(ggprof_table_write(&t, GGPROF_FMT_JSON, f, 80) == 0);
    fclose(f);
    CHECK(strstr(buf, "\"op\": \"say \\\"hi\\\",\\n\\u0001\"") != NULL);
    CHECK(strstr(buf, "\"gbps\": null, \"n\": null, \"detail\": null") != NULL);
    f = fmemopen(buf, sizeof(buf), "w");
    CHECK(ggprof_table_write(&t, GGPROF_FMT_CSV, f, 80) == 0);
    fclose(f);
    CHECK(strncmp(buf, "op,gbps,n,detail\n\"say \"\"hi\"\",\n\x01\",1.50,7,d\nMUL_MAT,,,\n", 52) == 0);
    f = fmemopen(buf, sizeof(buf), "w");
    CHECK(ggprof_table_write(&t, GGPROF_FMT_TABLE, f, 80) == 0);
    fclose(f);
    CHECK(strstr(buf, "detail") == NULL); /* a CSV/JSON-only column */
    CHECK(strstr(buf, "MUL_MAT") != NULL && strstr(buf, "   -") != NULL);
    ggprof_table_free(&t);
    ggprof_format fmt;
    CHECK(ggprof_format_parse("csv", &fmt) == 0 && fmt == GGPROF_FMT_CSV);
    CHECK(ggprof_format_parse("xml", &fmt) != 0);
}

int main(void) {
    ggprof_rl_types_builtin(&g_types);
    int failures = 0;
    RUN(test_types_builtin);
    RUN(test_mul_mat_f16);
    RUN(test_mul_mat_q4_0);
    RUN(test_mul_mat_batched);
    RUN(test_mul_mat_id);
    RUN(test_flash_attn_ext);
    RUN(test_add);
    RUN(test_rms_norm);
    RUN(test_get_rows_quantized);
    RUN(test_set_rows_and_cpy);
    RUN(test_rope_softmax_glu);
    RUN(test_node_from_text);
    RUN(test_unknown);
    RUN(test_roofs);
    RUN(test_output);
    return failures ? 1 : 0;
}
