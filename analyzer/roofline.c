/* The roofline model of ggml ops: the bytes each op reads and writes and the FLOPs it does, by type and shape. */
#include "roofline.h"
#include "trace_db.h"


#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


/* ---------------------------------------------------------------- types */

/* ggml 0.23's enum ggml_type with ggml_type_size and ggml_blck_size (read from libggml-base 0.23.0). Ids of
 * removed types (4, 5, 31-33, 36-38) are absent. */
static const struct {
    int         id;
    const char *name;
    int64_t     type_size, blck_size;
} k_types_0_23[] = {
    { 0, "f32", 4, 1 },          { 1, "f16", 2, 1 },          { 2, "q4_0", 18, 32 },       { 3, "q4_1", 20, 32 },
    { 6, "q5_0", 22, 32 },       { 7, "q5_1", 24, 32 },       { 8, "q8_0", 34, 32 },       { 9, "q8_1", 36, 32 },
    { 10, "q2_K", 84, 256 },     { 11, "q3_K", 110, 256 },    { 12, "q4_K", 144, 256 },    { 13, "q5_K", 176, 256 },
    { 14, "q6_K", 210, 256 },    { 15, "q8_K", 292, 256 },    { 16, "iq2_xxs", 66, 256 },  { 17, "iq2_xs", 74, 256 },
    { 18, "iq3_xxs", 98, 256 },  { 19, "iq1_s", 50, 256 },    { 20, "iq4_nl", 18, 32 },    { 21, "iq3_s", 110, 256 },
    { 22, "iq2_s", 82, 256 },    { 23, "iq4_xs", 136, 256 },  { 24, "i8", 1, 1 },          { 25, "i16", 2, 1 },
    { 26, "i32", 4, 1 },         { 27, "i64", 8, 1 },         { 28, "f64", 8, 1 },         { 29, "iq1_m", 56, 256 },
    { 30, "bf16", 2, 1 },        { 34, "tq1_0", 54, 256 },    { 35, "tq2_0", 66, 256 },    { 39, "mxfp4", 17, 32 },
    { 40, "nvfp4", 36, 64 },     { 41, "q1_0", 18, 128 },     { 42, "q2_0", 18, 64 },
};
#define N_TYPES_0_23 (sizeof(k_types_0_23) / sizeof(k_types_0_23[0]))

void ggprof_rl_types_builtin(ggprof_rl_types *t) {
    memset(t, 0, sizeof(*t));
    for (size_t i = 0; i < N_TYPES_0_23; i++) {
        int id = k_types_0_23[i].id;
        t->type_size[id] = k_types_0_23[i].type_size;
        t->blck_size[id] = k_types_0_23[i].blck_size;
        snprintf(t->name[id], sizeof(t->name[id]), "%s", k_types_0_23[i].name);
    }
}

int ggprof_rl_type_by_name(const char *name, int64_t *type_size, int64_t *blck_size) {
    for (size_t i = 0; i < N_TYPES_0_23; i++) {
        if (strcmp(k_types_0_23[i].name, name) == 0) {
            *type_size = k_types_0_23[i].type_size;
            *blck_size = k_types_0_23[i].blck_size;
            return 0;
        }
    }
    return -1;
}

int ggprof_rl_types_load(sqlite3 *db, int32_t pid, ggprof_rl_types *t) {
    ggprof_rl_types_builtin(t);
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, "SELECT type, name, type_size, blck_size FROM ggml_types WHERE pid = ?", -1, &st, NULL) !=
        SQLITE_OK) {
        return -1;
    }
    sqlite3_bind_int(st, 1, pid);
    int n = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        int id = sqlite3_column_int(st, 0);
        if (id < 0 || id >= GGPROF_RL_MAX_TYPES) continue;
        const char *name = (const char *) sqlite3_column_text(st, 1);
        int64_t size = sqlite3_column_int64(st, 2), blck = sqlite3_column_int64(st, 3);
        /* The ggml that ran named its ids: its numbering wins over 0.23's, and a name 0.23 knows supplies sizes
         * a row lacks. */
        if ((size <= 0 || blck <= 0) && (!name || ggprof_rl_type_by_name(name, &size, &blck) != 0)) size = blck = 0;
        t->type_size[id] = size > 0 ? size : 0;
        t->blck_size[id] = blck > 0 ? blck : 0;
        snprintf(t->name[id], sizeof(t->name[id]), "%s", name ? name : "?");
        n++;
    }
    sqlite3_finalize(st);
    return n;
}

/* ---------------------------------------------------------------- the model */

static double nel(const int64_t ne[4]) {
    double n = 1;
    for (int i = 0; i < 4; i++) n *= (double) (ne[i] > 0 ? ne[i] : 0);
    return n;
}

/* Bytes of n elements of a type: whole blocks, as ggml stores them. Returns -1 for an unknown type. */
static double type_bytes(const ggprof_rl_types *t, int type, double n) {
    if (type < 0 || type >= GGPROF_RL_MAX_TYPES || t->type_size[type] <= 0 || t->blck_size[type] <= 0) return -1;
    return ceil(n / (double) t->blck_size[type]) * (double) t->type_size[type];
}

static int has_src(const ggprof_rl_node *n, int i) {
    return i < n->n_src && n->type_src[i] >= 0 && nel(n->ne_src[i]) > 0;
}

/* Adds bytes to *acc, or clears *known when the type has no size. */
static void add_bytes(double *acc, int *known, const ggprof_rl_types *t, int type, double elements) {
    double b = type_bytes(t, type, elements);
    if (b < 0) {
        *known = 0;
    } else {
        *acc += b;
    }
}

static int is_f16(const ggprof_rl_types *t, int type) {
    return type >= 0 && type < GGPROF_RL_MAX_TYPES && (strcmp(t->name[type], "f16") == 0 || strcmp(t->name[type], "bf16") == 0);
}

/* FLOPs per output element of the elementwise ops, and 0 for the ops that only move or compare data.
 * Transcendental functions (exp, tanh, erf) count as a few FLOPs, as vectorised implementations spend them. */
static const struct {
    const char *name;
    double      per_elem;
} k_per_element[] = {
    { "ADD", 1 },  { "SUB", 1 },  { "MUL", 1 },   { "DIV", 1 },   { "ADD1", 1 }, { "ADD_ID", 1 }, { "SCALE", 2 },
    { "SQR", 1 },  { "SQRT", 1 }, { "LOG", 4 },   { "SIN", 4 },   { "COS", 4 },  { "CLAMP", 0 },  { "CPY", 0 },
    { "DUP", 0 },  { "CONT", 0 }, { "CONCAT", 0 }, { "PAD", 0 },  { "REPEAT", 0 }, { "IM2COL", 0 }, { "ARGSORT", 0 },
    { "TOP_K", 0 }, { "ARGMAX", 0 }, { "DIAG_MASK_INF", 0 }, { "DIAG_MASK_ZERO", 0 }, { "GET_ROWS", 0 },
    { "SET_ROWS", 0 }, { "NONE", 0 }, { "RESHAPE", 0 }, { "VIEW", 0 }, { "PERMUTE", 0 }, { "TRANSPOSE", 0 },
};

static const struct {
    const char *name;
    double      per_elem;
} k_unary[] = {
    { "ABS", 1 },   { "SGN", 1 },     { "NEG", 1 },        { "STEP", 1 },        { "RELU", 1 },       { "TANH", 4 },
    { "ELU", 4 },   { "SIGMOID", 4 }, { "SILU", 4 },       { "HARDSWISH", 3 },   { "HARDSIGMOID", 3 }, { "EXP", 4 },
    { "GELU", 8 },  { "GELU_ERF", 8 }, { "GELU_QUICK", 5 }, { "EXPM1", 4 },      { "SOFTPLUS", 8 },   { "XIELU", 8 },
    { "FLOOR", 1 }, { "CEIL", 1 },    { "ROUND", 1 },      { "TRUNC", 1 },
    /* GLU: the activation of one half times the other half. */
    { "REGLU", 2 }, { "GEGLU", 9 },   { "SWIGLU", 5 },     { "GEGLU_ERF", 9 },   { "GEGLU_QUICK", 6 }, { "SWIGLU_OAI", 7 },
    { "SWIGLU_CLAMP", 7 },
};

/* ggml 0.23's enum ggml_unary_op and enum ggml_glu_op, as ggml_unary_op_name and ggml_glu_op_name spell them:
 * a JSON profile carries the sub-op's id only. */
static const char *const k_unary_0_23[] = { "ABS",  "SGN",        "NEG",       "STEP",        "TANH",     "ELU",
                                            "RELU", "SIGMOID",    "GELU",      "GELU_QUICK",  "SILU",     "HARDSWISH",
                                            "HARDSIGMOID", "EXP", "EXPM1",     "SOFTPLUS",    "GELU_ERF", "XIELU",
                                            "FLOOR", "CEIL",      "ROUND",     "TRUNC" };
static const char *const k_glu_0_23[]   = { "REGLU",     "GEGLU",       "SWIGLU",      "SWIGLU_OAI",
                                            "GEGLU_ERF", "GEGLU_QUICK", "SWIGLU_CLAMP" };

static const char *sub_op_0_23(const char *op, int id) {
    if (id < 0) return "";
    if (strcmp(op, "UNARY") == 0 && (size_t) id < sizeof(k_unary_0_23) / sizeof(k_unary_0_23[0])) return k_unary_0_23[id];
    if (strcmp(op, "GLU") == 0 && (size_t) id < sizeof(k_glu_0_23) / sizeof(k_glu_0_23[0])) return k_glu_0_23[id];
    return "";
}

static double unary_cost(const char *sub_op) {
    for (size_t i = 0; i < sizeof(k_unary) / sizeof(k_unary[0]); i++) {
        if (strcmp(k_unary[i].name, sub_op) == 0) return k_unary[i].per_elem;
    }
    return 1; /* an activation ggml added after 0.23: one FLOP per element rather than none */
}

void ggprof_rl_cost_of(const ggprof_rl_node *n, const ggprof_rl_types *t, ggprof_rl_cost *c) {
    memset(c, 0, sizeof(*c));
    c->flops_known = 1;
    c->bytes_known = 1;
    const char *op = n->op;
    double out = nel(n->ne);
    int    read_src[GGPROF_RL_MAX_SRC];
    for (int i = 0; i < GGPROF_RL_MAX_SRC; i++) read_src[i] = has_src(n, i);
    double written = out; /* elements written, at out_type */

    if (strcmp(op, "MUL_MAT") == 0 || strcmp(op, "MUL_MAT_ID") == 0) {
        /* src0 [K, M, ...] times src1 [K, N, ...]: each output element is a K-long dot product. MUL_MAT_ID's
         * output [M, n_expert_used, n_tokens] holds exactly the products the routing asked for. */
        c->flops = 2.0 * (double) n->ne_src[0][0] * out;
        c->f16   = is_f16(t, n->type_src[0]);
    } else if (strcmp(op, "OUT_PROD") == 0) {
        c->flops = 2.0 * (double) n->ne_src[0][1] * out;
    } else if (strcmp(op, "FLASH_ATTN_EXT") == 0) {
        /* q [D, n_q, H, B], k [D, n_kv, H_kv, B], v [Dv, n_kv, H_kv, B]: Q.K^T, then softmax over n_kv (scale,
         * mask, max-subtract, exp, sum: 5 per score), then .V. Every KV position counts, masked or not. */
        double scores = (double) n->ne_src[1][1] * (double) n->ne_src[0][1] * (double) n->ne_src[0][2] *
                        (double) (n->ne_src[0][3] > 0 ? n->ne_src[0][3] : 1);
        c->flops = 2.0 * (double) n->ne_src[0][0] * scores + 2.0 * (double) n->ne_src[2][0] * scores + 5.0 * scores;
        c->f16   = is_f16(t, n->type_src[1]);
    } else if (strcmp(op, "RMS_NORM") == 0 || strcmp(op, "L2_NORM") == 0) {
        c->flops = 3.0 * out; /* square, accumulate, scale */
    } else if (strcmp(op, "NORM") == 0 || strcmp(op, "GROUP_NORM") == 0) {
        c->flops = 5.0 * out; /* mean, subtract, square, accumulate, scale */
    } else if (strcmp(op, "SOFT_MAX") == 0) {
        c->flops = (read_src[1] ? 6.0 : 5.0) * out; /* scale, (mask), max-subtract, exp, sum, normalise */
    } else if (strcmp(op, "ROPE") == 0 || strcmp(op, "ROPE_BACK") == 0) {
        /* Rotating a pair is 4 multiplies and 2 adds: 3 per element, on the first n_dims of each row. */
        double rotated = n->ne[0] > 0 && n->op_params[1] > 0 && n->op_params[1] < n->ne[0]
                             ? (double) n->op_params[1] / (double) n->ne[0] : 1.0;
        c->flops = 3.0 * out * rotated;
    } else if (strcmp(op, "SUM") == 0 || strcmp(op, "SUM_ROWS") == 0 || strcmp(op, "MEAN") == 0) {
        c->flops = read_src[0] ? nel(n->ne_src[0]) : 0;
    } else if (strcmp(op, "UNARY") == 0 || strcmp(op, "GLU") == 0) {
        c->flops = unary_cost(n->sub_op) * out;
    } else {
        size_t i = 0;
        while (i < sizeof(k_per_element) / sizeof(k_per_element[0]) && strcmp(k_per_element[i].name, op) != 0) i++;
        if (i < sizeof(k_per_element) / sizeof(k_per_element[0])) {
            c->flops = k_per_element[i].per_elem * out;
        } else {
            c->flops_known = 0;
        }
    }

    /* Bytes: every source read once, the output written once; the exceptions read or write less. */
    if (strcmp(op, "MUL_MAT_ID") == 0) {
        /* src0 [K, M, n_expert], ids (src2) [n_expert_used, n_tokens]: only the experts the ids name are read.
         * Which experts are distinct is not in the trace, so the bound is min(n_expert, n_expert_used x n_tokens). */
        double n_expert = (double) (n->ne_src[0][2] > 0 ? n->ne_src[0][2] : 1);
        double used     = has_src(n, 2) ? (double) n->ne_src[2][0] * (double) n->ne_src[2][1] : n_expert;
        double experts  = used < n_expert ? used : n_expert;
        add_bytes(&c->bytes_read, &c->bytes_known, t, n->type_src[0], nel(n->ne_src[0]) / n_expert * experts);
        read_src[0] = 0;
    } else if (strcmp(op, "GET_ROWS") == 0) {
        /* The rows gathered, at the table's type (a quantized table is read as its blocks). */
        add_bytes(&c->bytes_read, &c->bytes_known, t, n->type_src[0], out);
        read_src[0] = 0;
    } else if (strcmp(op, "SET_ROWS") == 0) {
        /* src0 rows are written through ids (src1) into the destination (src2), which is not read. */
        read_src[2] = 0;
        written     = read_src[0] ? nel(n->ne_src[0]) : out;
    } else if (strcmp(op, "CPY") == 0) {
        /* src0 is copied into src1's memory (the output is a view of it): src1 is written, not read. */
        read_src[1] = 0;
        written     = read_src[0] ? nel(n->ne_src[0]) : out;
    } else if (strcmp(op, "NONE") == 0 || strcmp(op, "RESHAPE") == 0 || strcmp(op, "VIEW") == 0 ||
               strcmp(op, "PERMUTE") == 0 || strcmp(op, "TRANSPOSE") == 0) {
        for (int i = 0; i < GGPROF_RL_MAX_SRC; i++) read_src[i] = 0;
        written = 0;
    }
    for (int i = 0; i < GGPROF_RL_MAX_SRC; i++) {
        if (read_src[i]) add_bytes(&c->bytes_read, &c->bytes_known, t, n->type_src[i], nel(n->ne_src[i]));
    }
    add_bytes(&c->bytes_written, &c->bytes_known, t, n->out_type, written);

    /* A fused pair (ggml's CPU RMS_NORM+MUL): the second op is elementwise on the first's output, which never
     * reaches memory; its other operand is the norm weight, one row broadcast over the rows. The record holds
     * only the first node, so that row's type is taken as the output's (norm weights are F32, as outputs). */
    const char *plus = strchr(n->fused, '+');
    if (plus) {
        const char *second = plus + 1;
        if (strcmp(second, "MUL") == 0 || strcmp(second, "ADD") == 0 || strcmp(second, "SUB") == 0 ||
            strcmp(second, "DIV") == 0) {
            c->flops += out;
            add_bytes(&c->bytes_read, &c->bytes_known, t, n->out_type, (double) (n->ne[0] > 0 ? n->ne[0] : 0));
        } else {
            c->flops_known = 0;
        }
    }
    if (!c->flops_known) c->flops = 0;
}

/* ---------------------------------------------------------------- a node from the trace's columns */

/* What both constructors share: the names, and the sub-op named from its id when the trace did not name it. */
static void node_names(ggprof_rl_node *n, const char *op, const char *fused, const char *sub_op, int sub_op_id, int out_type,
                       int n_src) {
    memset(n, 0, sizeof(*n));
    snprintf(n->op, sizeof(n->op), "%s", op ? op : "");
    snprintf(n->fused, sizeof(n->fused), "%s", fused ? fused : "");
    snprintf(n->sub_op, sizeof(n->sub_op), "%s", sub_op && *sub_op ? sub_op : sub_op_0_23(n->op, sub_op_id));
    n->out_type = out_type;
    n->n_src    = n_src < 0 ? 0 : n_src > GGPROF_RL_MAX_SRC ? GGPROF_RL_MAX_SRC : n_src;
}

void ggprof_rl_node_from_msg(ggprof_rl_node *n, const char *op, const char *fused, const ggprof_msg_node *m) {
    node_names(n, op, fused, m->sub_op_name, m->sub_op, m->out_type, m->n_src);
    _Static_assert(GGPROF_RL_MAX_SRC == GGPROF_MAX_SRC, "a node's sources: the wire's and the model's");
    memcpy(n->ne, m->ne, sizeof(n->ne));
    memcpy(n->ne_src, m->ne_src, sizeof(n->ne_src));
    for (int i = 0; i < GGPROF_RL_MAX_SRC; i++) n->type_src[i] = m->type_src[i];
    for (int i = 0; i < 16 && i < GGPROF_N_OP_PARAMS; i++) n->op_params[i] = m->op_params[i];
}

void ggprof_rl_node_from_text(ggprof_rl_node *n, const char *op, const char *fused, const char *sub_op,
                              int sub_op_id, const char *ne, int out_type, int n_src, const char *ne_src, const char *type_src,
                              const char *op_params) {
    node_names(n, op, fused, sub_op, sub_op_id, out_type, n_src);
    ggprof_db_ints(ne, n->ne, 4);
    ggprof_db_ints(ne_src, &n->ne_src[0][0], GGPROF_RL_MAX_SRC * 4);
    int64_t v[GGPROF_RL_MAX_SRC > 16 ? GGPROF_RL_MAX_SRC : 16];
    for (int i = 0; i < GGPROF_RL_MAX_SRC; i++) n->type_src[i] = -1;
    int nt = ggprof_db_ints(type_src, v, GGPROF_RL_MAX_SRC);
    for (int i = 0; i < nt; i++) n->type_src[i] = (int) v[i];
    int np = ggprof_db_ints(op_params, v, 16);
    for (int i = 0; i < np; i++) n->op_params[i] = (int32_t) v[i];
}
