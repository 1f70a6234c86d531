/* The roofline model of ggml ops (bytes moved, FLOPs), the device roofs, and a trace's ops costed by it. */
#include "roofline.h"

#include "cli.h"
#include "output.h"
#include "trace.h"
#include "hash.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>


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

/* ---------------------------------------------------------------- roofs */

static int parse_positive(const char *s, char **end, double *v) {
    errno = 0;
    *v    = strtod(s, end);
    return *end != s && errno == 0 && isfinite(*v) && *v > 0 ? 0 : -1;
}

int ggprof_roof_parse(ggprof_roofs *r, const char *spec, char *why, size_t why_len) {
    const char *eq = strchr(spec, '=');
    ggprof_roof roof;
    memset(&roof, 0, sizeof(roof));
    if (!eq || eq == spec || (size_t) (eq - spec) >= sizeof(roof.backend)) {
        snprintf(why, why_len, "bad roof '%s'; expected BACKEND=GBPS,GFLOPS[,GFLOPS_F16] (e.g. CPU=20,150)", spec);
        return -1;
    }
    memcpy(roof.backend, spec, (size_t) (eq - spec));
    char *end;
    double *fields[3] = { &roof.gbps, &roof.gflops, &roof.gflops_f16 };
    const char *p = eq + 1;
    for (int i = 0; i < 3; i++) {
        if (parse_positive(p, &end, fields[i]) != 0 || (*end != ',' && *end != '\0') || (i == 2 && *end)) {
            snprintf(why, why_len, "bad roof '%s'; expected BACKEND=GBPS,GFLOPS[,GFLOPS_F16] with positive numbers", spec);
            return -1;
        }
        if (*end == '\0') {
            if (i == 0) {
                snprintf(why, why_len, "bad roof '%s': no GFLOPS; expected BACKEND=GBPS,GFLOPS[,GFLOPS_F16]", spec);
                return -1;
            }
            break;
        }
        p = end + 1;
    }
    for (size_t i = 0; i < r->n; i++) {
        if (strcasecmp(r->v[i].backend, roof.backend) == 0) {
            r->v[i] = roof;
            return 0;
        }
    }
    if (r->n == sizeof(r->v) / sizeof(r->v[0])) {
        snprintf(why, why_len, "too many roofs (at most %zu backends)", sizeof(r->v) / sizeof(r->v[0]));
        return -1;
    }
    r->v[r->n++] = roof;
    return 0;
}

int ggprof_roofs_read(ggprof_roofs *r, const char *path, char *why, size_t why_len) {
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(why, why_len, "cannot open roof file '%s': %s", path, strerror(errno));
        return -1;
    }
    char line[512], sub[400];
    int  lineno = 0, rc = 0, n = 0;
    while (rc == 0 && fgets(line, sizeof(line), f)) {
        lineno++;
        char *hash = strchr(line, '#');
        if (hash) *hash = '\0';
        char *s = line, *e = line + strlen(line);
        while (*s && isspace((unsigned char) *s)) s++;
        while (e > s && isspace((unsigned char) e[-1])) *--e = '\0';
        if (!*s) continue;
        if (ggprof_roof_parse(r, s, sub, sizeof(sub)) != 0) {
            snprintf(why, why_len, "%s:%d: %s", path, lineno, sub);
            rc = -1;
        }
        n++;
    }
    if (rc == 0 && ferror(f)) {
        snprintf(why, why_len, "cannot read roof file '%s': %s", path, strerror(errno));
        rc = -1;
    }
    fclose(f);
    if (rc == 0 && n == 0) {
        snprintf(why, why_len, "roof file '%s' has no roof; expected lines BACKEND=GBPS,GFLOPS[,GFLOPS_F16]", path);
        rc = -1;
    }
    return rc;
}

int ggprof_roofs_opt(void *roofs, const char *option, const char *value) {
    char why[512];
    int  rc = strcmp(option, "--roof-file") == 0 ? ggprof_roofs_read(roofs, value, why, sizeof(why))
                                                 : ggprof_roof_parse(roofs, value, why, sizeof(why));
    return rc == 0 ? 0 : ggprof_fail(GGPROF_EXIT_USAGE, "%s", why);
}

int ggprof_format_opt(void *format, const char *option, const char *value) {
    ggprof_format f;
    if (ggprof_format_parse(value, &f) != 0) {
        return ggprof_fail(GGPROF_EXIT_USAGE, "%s '%s': unknown format; expected table, csv or json", option, value);
    }
    *(int *) format = (int) f;
    return 0;
}

const ggprof_roof *ggprof_roofs_find(const ggprof_roofs *r, const char *backend) {
    for (size_t i = 0; r && i < r->n; i++) {
        if (strcasecmp(r->v[i].backend, backend) == 0) return &r->v[i];
    }
    return NULL;
}

void ggprof_roofs_describe(FILE *f, const ggprof_roofs *r) {
    if (!r->n) fprintf(f, "roof%%: give --roof BACKEND=GBPS,GFLOPS or --roof-file FILE ('ggprof calibrate').\n");
    for (size_t i = 0; i < r->n; i++) {
        fprintf(f, "roof %s: %.2f GB/s, %.2f GFLOP/s", r->v[i].backend, r->v[i].gbps, r->v[i].gflops);
        if (r->v[i].gflops_f16 > 0) fprintf(f, ", F16 %.2f GFLOP/s", r->v[i].gflops_f16);
        fprintf(f, "\n");
    }
}

double ggprof_rl_roof_ns(const ggprof_roof *r, const ggprof_rl_cost *c) {
    if (!r || !c->bytes_known) return 0;
    double peak   = c->f16 && r->gflops_f16 > 0 ? r->gflops_f16 : r->gflops;
    double mem_ns = (c->bytes_read + c->bytes_written) / r->gbps; /* GB/s is bytes per ns */
    double cmp_ns = c->flops / peak;
    return mem_ns > cmp_ns ? mem_ns : cmp_ns;
}

/* ---------------------------------------------------------------- a trace's ops */

/* Every integer of a JSON text, in order ("[[1, 2], [3]]" -> 1 2 3); returns how many were stored. */
static int ints_of(const char *s, int64_t *out, int max) {
    int n = 0;
    for (const char *p = s; p && *p && n < max; p++) {
        if ((*p >= '0' && *p <= '9') || (*p == '-' && p[1] >= '0' && p[1] <= '9')) {
            char *end;
            out[n++] = strtoll(p, &end, 10);
            p        = end - 1;
        }
    }
    return n;
}

void ggprof_rl_node_from_text(ggprof_rl_node *n, const char *op, const char *fused, const char *sub_op,
                              int sub_op_id, const char *ne, int out_type, int n_src, const char *ne_src, const char *type_src,
                              const char *op_params) {
    memset(n, 0, sizeof(*n));
    snprintf(n->op, sizeof(n->op), "%s", op ? op : "");
    snprintf(n->fused, sizeof(n->fused), "%s", fused ? fused : "");
    snprintf(n->sub_op, sizeof(n->sub_op), "%s", sub_op && *sub_op ? sub_op : sub_op_0_23(n->op, sub_op_id));
    ints_of(ne, n->ne, 4);
    n->out_type = out_type;
    n->n_src    = n_src < 0 ? 0 : n_src > GGPROF_RL_MAX_SRC ? GGPROF_RL_MAX_SRC : n_src;
    ints_of(ne_src, &n->ne_src[0][0], GGPROF_RL_MAX_SRC * 4);
    int64_t v[GGPROF_RL_MAX_SRC > 16 ? GGPROF_RL_MAX_SRC : 16];
    for (int i = 0; i < GGPROF_RL_MAX_SRC; i++) n->type_src[i] = -1;
    int nt = ints_of(type_src, v, GGPROF_RL_MAX_SRC);
    for (int i = 0; i < nt; i++) n->type_src[i] = (int) v[i];
    int np = ints_of(op_params, v, 16);
    for (int i = 0; i < np; i++) n->op_params[i] = (int32_t) v[i];
}

static const char *type_name(const ggprof_rl_types *t, int type) {
    return type >= 0 && type < GGPROF_RL_MAX_TYPES && t->name[type][0] ? t->name[type] : "?";
}

void ggprof_rl_shape(char *buf, size_t len, const ggprof_rl_node *n, const ggprof_rl_types *t) {
    size_t p = 0;
    buf[0]   = '\0';
    for (int i = 0; i < 2 && i < n->n_src && p < len; i++) {
        int nd = 4;
        while (nd > 1 && n->ne_src[i][nd - 1] <= 1) nd--;
        p += (size_t) snprintf(buf + p, len - p, "%s%s[", i ? " " : "", type_name(t, n->type_src[i]));
        for (int d = 0; d < nd && p < len; d++) {
            p += (size_t) snprintf(buf + p, len - p, "%s%lld", d ? "," : "", (long long) n->ne_src[i][d]);
        }
        if (p < len) p += (size_t) snprintf(buf + p, len - p, "]");
    }
}

void ggprof_rl_row_rates(const ggprof_rl_row *r, double *gbps, double *gflops, double *flop_per_byte, double *roof_pct) {
    double ns      = (double) r->total_ns;
    *gbps          = r->bytes_known && ns > 0 ? r->bytes / ns : NAN; /* bytes per ns is GB/s */
    *gflops        = r->flops_known && ns > 0 ? r->flops / ns : NAN;
    *flop_per_byte = r->flops_known && r->bytes_known && r->bytes > 0 ? r->flops / r->bytes : NAN;
    *roof_pct      = r->has_roof && ns > 0 ? 100.0 * r->roof_ns / ns : NAN;
}

int ggprof_rl_rollup(const ggprof_rl_groups *g, const ggprof_roofs *roofs, int by_shape, ggprof_rl_row **rows,
                     size_t *n) {
    *rows = NULL;
    *n    = 0;
    if (!g->n) return 0;
    ggprof_rl_row *v = calloc(g->n, sizeof(*v));
    if (!v) return -1;
    size_t nr = 0;
    for (size_t i = 0; i < g->n; i++) {
        const ggprof_rl_group *x = &g->v[i];
        const char *shape = by_shape ? x->shape : "";
        char out[96] = "";
        if (by_shape) {
            int nd = 4;
            while (nd > 1 && x->node.ne[nd - 1] <= 1) nd--;
            size_t p = (size_t) snprintf(out, sizeof(out), "[");
            for (int d = 0; d < nd && p < sizeof(out); d++) {
                p += (size_t) snprintf(out + p, sizeof(out) - p, "%s%lld", d ? "," : "", (long long) x->node.ne[d]);
            }
            if (p < sizeof(out)) snprintf(out + p, sizeof(out) - p, "]");
        }
        /* Few rows (tens to hundreds): a linear search keeps the first-seen order without a hash table. */
        size_t r = 0;
        while (r < nr && !(strcmp(v[r].label, x->label) == 0 && strcmp(v[r].backend, x->backend) == 0 &&
                           strcmp(v[r].shape, shape) == 0 && strcmp(v[r].out_shape, out) == 0)) {
            r++;
        }
        ggprof_rl_row *row = &v[r];
        if (r == nr) {
            nr++;
            snprintf(row->label, sizeof(row->label), "%s", x->label);
            snprintf(row->backend, sizeof(row->backend), "%s", x->backend);
            snprintf(row->shape, sizeof(row->shape), "%s", shape);
            snprintf(row->out_shape, sizeof(row->out_shape), "%s", out);
            row->first_seq   = x->first_seq;
            row->min_ns      = x->min_ns;
            row->flops_known = row->bytes_known = 1;
            const ggprof_roof *roof = ggprof_roofs_find(roofs, x->backend);
            row->has_roof = roof != NULL;
        }
        double n_exec = (double) x->count;
        row->count += x->count;
        row->total_ns += x->total_ns;
        if (x->min_ns < row->min_ns) row->min_ns = x->min_ns;
        if (x->max_ns > row->max_ns) row->max_ns = x->max_ns;
        row->flops += x->cost.flops * n_exec;
        row->bytes += (x->cost.bytes_read + x->cost.bytes_written) * n_exec;
        row->bytes_written += x->cost.bytes_written * n_exec;
        row->flops_known &= x->cost.flops_known;
        row->bytes_known &= x->cost.bytes_known;
        if (strcmp(x->node.op, "MUL_MAT_ID") == 0) row->mul_mat_id = 1;
        const ggprof_roof *roof = ggprof_roofs_find(roofs, x->backend);
        if (roof && x->cost.bytes_known) {
            double peak = x->cost.f16 && roof->gflops_f16 > 0 ? roof->gflops_f16 : roof->gflops;
            row->roof_ns += ggprof_rl_roof_ns(roof, &x->cost) * n_exec;
            row->roof_mem_ns += (x->cost.bytes_read + x->cost.bytes_written) / roof->gbps * n_exec;
            row->roof_cmp_ns += x->cost.flops / peak * n_exec;
        }
        if (!row->bytes_known || !row->flops_known) row->has_roof = 0;
    }
    *rows = v;
    *n    = nr;
    return 0;
}

/* Types are per process: a trace of several processes keeps one table each. */
typedef struct {
    int32_t         pid;
    ggprof_rl_types t;
} pid_types;

static const ggprof_rl_types *types_for(sqlite3 *db, pid_types **cache, size_t *n, int32_t pid, int *from_trace) {
    for (size_t i = 0; i < *n; i++) {
        if ((*cache)[i].pid == pid) return &(*cache)[i].t;
    }
    pid_types *c = realloc(*cache, (*n + 1) * sizeof(**cache));
    if (!c) return NULL;
    *cache       = c;
    c[*n].pid    = pid;
    int rows     = ggprof_rl_types_load(db, pid, &c[*n].t);
    if (rows > 0) *from_trace = 1;
    return &c[(*n)++].t;
}

/* The op records grouped by process, scheduler, backend, node, name and fusion label, in one sequential read
 * of the events table and a hash table here: SQLite's GROUP BY over a million rows sorted them all (1.3-2.4 s);
 * this reads them once (docs/analysis.md, "Speed"). Groups come out in the order of their first record. */
typedef struct {
    int32_t  pid, backend_id;
    int64_t  sched_id, node_id, fused_node_id;
    char    *name, *extra; /* NULL when NULL in the trace */
    uint64_t hash;
    int64_t  count, first_seq;
    uint64_t total_ns, min_ns, max_ns;
    int      merged; /* folded into an earlier group with the same label */
} ev_group;

typedef struct {
    ev_group    *v;
    size_t       n, cap;
    ggprof_index index;
} ev_table;

static bool str_eq(const char *a, const char *b) { return a && b ? strcmp(a, b) == 0 : a == b; }

static uint64_t ev_hash(int32_t pid, int64_t sched, int32_t backend, int64_t node, int64_t fused, const char *name,
                        const char *extra) {
    uint64_t h = GGPROF_FNV_OFFSET;
    h = ggprof_fnv_step(h, (uint64_t) (uint32_t) pid);
    h = ggprof_fnv_step(h, (uint64_t) sched);
    h = ggprof_fnv_step(h, (uint64_t) (uint32_t) backend);
    h = ggprof_fnv_step(h, (uint64_t) node);
    h = ggprof_fnv_step(h, (uint64_t) fused);
    h = ggprof_fnv_step(h, name ? ggprof_fnv_str(name) : 1);
    h = ggprof_fnv_step(h, extra ? ggprof_fnv_str(extra) : 1);
    return h;
}

static uint64_t ev_at(const void *ctx, size_t i) { return ((const ev_table *) ctx)->v[i].hash; }

static int same_ev(const void *ctx, size_t i, const void *key) {
    const ev_group *x = &((const ev_table *) ctx)->v[i], *k = key;
    return x->hash == k->hash && x->pid == k->pid && x->sched_id == k->sched_id && x->backend_id == k->backend_id &&
           x->node_id == k->node_id && x->fused_node_id == k->fused_node_id && str_eq(x->name, k->name) &&
           str_eq(x->extra, k->extra);
}

static ev_group *ev_find(ev_table *t, int32_t pid, int64_t sched, int32_t backend, int64_t node, int64_t fused,
                         const char *name, const char *extra) {
    if (ggprof_index_reserve(&t->index, 0, t->n, ev_at, t) != 0) return NULL;
    ev_group k = { .pid = pid, .backend_id = backend, .sched_id = sched, .node_id = node, .fused_node_id = fused,
                   .name = (char *) name, .extra = (char *) extra, .hash = ev_hash(pid, sched, backend, node, fused, name, extra) };
    uint32_t *slot = ggprof_index_slot(&t->index, k.hash, same_ev, t, &k);
    if (*slot) return &t->v[*slot - 1];
    if (t->n == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 256;
        ev_group *v = realloc(t->v, cap * sizeof(*v));
        if (!v) return NULL;
        t->v   = v;
        t->cap = cap;
    }
    ev_group *x = &t->v[t->n];
    memset(x, 0, sizeof(*x));
    x->pid = pid, x->sched_id = sched, x->backend_id = backend, x->node_id = node, x->fused_node_id = fused;
    x->name  = name ? strdup(name) : NULL;
    x->extra = extra ? strdup(extra) : NULL;
    if ((name && !x->name) || (extra && !x->extra)) return NULL;
    x->hash = k.hash;
    x->min_ns = UINT64_MAX;
    *slot     = (uint32_t) ++t->n;
    return x;
}

static void ev_free(ev_table *t) {
    for (size_t i = 0; i < t->n; i++) {
        free(t->v[i].name);
        free(t->v[i].extra);
    }
    free(t->v);
    ggprof_index_free(&t->index);
}

/* per_record: also each record's rowid and group (rec_seq, rec_group), in rowid order. */
static int groups_load(sqlite3 *db, ggprof_rl_groups *g, int per_record, char *why, size_t why_len) {
    memset(g, 0, sizeof(*g));
    ev_table t = { 0 };
    sqlite3_stmt *st = NULL;
    int rc = 0, step;
    size_t cap_rec = 0;
    uint32_t *ev_to_g = NULL; /* per_record: event group -> group */
    /* 1. Every op record, once, in file order. */
    if (sqlite3_prepare_v2(db, "SELECT pid, sched_id, backend_id, node_id, fused_node_id, name, extra, duration_ns, rowid"
                               " FROM events WHERE type = 0 ORDER BY rowid", -1, &st, NULL) != SQLITE_OK) {
        snprintf(why, why_len, "reading the trace's ops: %s", sqlite3_errmsg(db));
        return -1;
    }
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        ev_group *x = ev_find(&t, sqlite3_column_int(st, 0), sqlite3_column_int64(st, 1), sqlite3_column_int(st, 2),
                              sqlite3_column_type(st, 3) == SQLITE_NULL ? INT64_MIN : sqlite3_column_int64(st, 3),
                              sqlite3_column_int64(st, 4), (const char *) sqlite3_column_text(st, 5),
                              (const char *) sqlite3_column_text(st, 6));
        if (!x) {
            snprintf(why, why_len, "out of memory");
            rc = -1;
            break;
        }
        uint64_t d = (uint64_t) sqlite3_column_int64(st, 7);
        if (x->count++ == 0) x->first_seq = sqlite3_column_int64(st, 8);
        if (per_record) { /* the event group for now; made the group's index below */
            if (g->n_rec == cap_rec) {
                size_t ncap = cap_rec ? cap_rec * 2 : 4096;
                int64_t *seq = realloc(g->rec_seq, ncap * sizeof(*seq));
                if (seq) g->rec_seq = seq;
                uint32_t *grp = seq ? realloc(g->rec_group, ncap * sizeof(*grp)) : NULL;
                if (!grp) {
                    snprintf(why, why_len, "out of memory");
                    rc = -1;
                    break;
                }
                g->rec_group = grp;
                cap_rec      = ncap;
            }
            g->rec_seq[g->n_rec]     = sqlite3_column_int64(st, 8);
            g->rec_group[g->n_rec++] = (uint32_t) (x - t.v);
        }
        x->total_ns += d;
        if (d < x->min_ns) x->min_ns = d;
        if (d > x->max_ns) x->max_ns = d;
    }
    if (rc == 0 && step != SQLITE_DONE) {
        snprintf(why, why_len, "reading the trace's ops: %s", sqlite3_errmsg(db));
        rc = -1;
    }
    sqlite3_finalize(st);
    /* 2. Per group: its node, its fused partner's op, its backend's name. */
    sqlite3_stmt *node = NULL, *fop = NULL, *be = NULL, *be_any = NULL;
    if (rc == 0 &&
        (sqlite3_prepare_v2(db, "SELECT op, sub_op_name, ne, COALESCE(out_type, -1), COALESCE(n_src, 0), ne_src, type_src,"
                                " op_params, COALESCE(sub_op, -1) FROM nodes WHERE pid = ? AND node_id = ?", -1, &node, NULL) != SQLITE_OK ||
         sqlite3_prepare_v2(db, "SELECT op FROM nodes WHERE pid = ? AND node_id = ?", -1, &fop, NULL) != SQLITE_OK ||
         sqlite3_prepare_v2(db, "SELECT name FROM backends WHERE pid = ? AND sched_id = ? AND id = ?", -1, &be, NULL) != SQLITE_OK ||
         sqlite3_prepare_v2(db, "SELECT name FROM backends WHERE id = ? ORDER BY pid, sched_id LIMIT 1", -1, &be_any, NULL) != SQLITE_OK)) {
        snprintf(why, why_len, "reading the trace's ops: %s", sqlite3_errmsg(db));
        rc = -1;
    }
    pid_types *types = NULL;
    size_t n_types = 0, cap = 0;
    struct key { size_t src; char *fused; } *keys = NULL; /* per group: its first event group, its label */
    if (rc == 0 && per_record && t.n && !(ev_to_g = malloc(t.n * sizeof(*ev_to_g)))) {
        snprintf(why, why_len, "out of memory");
        rc = -1;
    }
    for (size_t i = 0; rc == 0 && i < t.n; i++) {
        ev_group *e = &t.v[i];
        bool has_node = false;
        if (e->node_id != INT64_MIN) {
            sqlite3_bind_int(node, 1, e->pid);
            sqlite3_bind_int64(node, 2, e->node_id);
            has_node = sqlite3_step(node) == SQLITE_ROW;
        }
        /* The fusion label, as the records view makes it: extra, else "OP+OP" of a fused pair. */
        char *fused = e->extra ? strdup(e->extra) : NULL;
        if (!fused && e->fused_node_id > 0 && has_node && sqlite3_column_type(node, 0) != SQLITE_NULL) {
            sqlite3_bind_int(fop, 1, e->pid);
            sqlite3_bind_int64(fop, 2, e->fused_node_id);
            if (sqlite3_step(fop) == SQLITE_ROW && sqlite3_column_type(fop, 0) != SQLITE_NULL) {
                size_t len = strlen((const char *) sqlite3_column_text(node, 0)) + strlen((const char *) sqlite3_column_text(fop, 0)) + 2;
                fused = malloc(len);
                if (fused) snprintf(fused, len, "%s+%s", sqlite3_column_text(node, 0), sqlite3_column_text(fop, 0));
            }
            sqlite3_reset(fop);
        }
        /* Groups that differ only in how their label was made are one group. */
        ggprof_rl_group *x = NULL;
        for (size_t j = 0; j < g->n; j++) {
            const ev_group *f = &t.v[keys[j].src];
            if (f->pid == e->pid && f->sched_id == e->sched_id && f->backend_id == e->backend_id && f->node_id == e->node_id &&
                str_eq(f->name, e->name) && str_eq(keys[j].fused, fused)) {
                x = &g->v[j];
                if (ev_to_g) ev_to_g[i] = (uint32_t) j;
                break;
            }
        }
        if (x) {
            x->count += e->count;
            x->total_ns += e->total_ns;
            if (e->min_ns < x->min_ns) x->min_ns = e->min_ns;
            if (e->max_ns > x->max_ns) x->max_ns = e->max_ns;
            g->op_ns += e->total_ns;
            free(fused);
            sqlite3_reset(node);
            continue;
        }
        if (g->n == cap) {
            size_t ncap = cap ? cap * 2 : 256;
            ggprof_rl_group *v = realloc(g->v, ncap * sizeof(*v));
            if (v) g->v = v;
            struct key *k = v ? realloc(keys, ncap * sizeof(*k)) : NULL;
            if (!k) {
                snprintf(why, why_len, "out of memory");
                free(fused);
                rc = -1;
                break;
            }
            keys = k;
            cap  = ncap;
        }
        keys[g->n] = (struct key) { i, fused };
        if (ev_to_g) ev_to_g[i] = (uint32_t) g->n;
        x = &g->v[g->n];
        memset(x, 0, sizeof(*x));
        x->pid = e->pid;
        const char *bname = NULL;
        sqlite3_bind_int(be, 1, e->pid);
        sqlite3_bind_int64(be, 2, e->sched_id);
        sqlite3_bind_int(be, 3, e->backend_id);
        if (sqlite3_step(be) == SQLITE_ROW) bname = (const char *) sqlite3_column_text(be, 0);
        if (!bname) {
            sqlite3_bind_int(be_any, 1, e->backend_id);
            if (sqlite3_step(be_any) == SQLITE_ROW) bname = (const char *) sqlite3_column_text(be_any, 0);
        }
        snprintf(x->backend, sizeof(x->backend), "%s", bname ? bname : "unknown");
        sqlite3_reset(be);
        sqlite3_reset(be_any);
        snprintf(x->label, sizeof(x->label), "%s", fused && strchr(fused, '+') ? fused : e->name ? e->name : "unknown");
        x->count     = e->count;
        x->total_ns  = e->total_ns;
        x->min_ns    = e->min_ns;
        x->max_ns    = e->max_ns;
        x->first_seq = e->first_seq;
        ggprof_rl_node_from_text(&x->node, e->name, fused, has_node ? (const char *) sqlite3_column_text(node, 1) : NULL,
                                 has_node ? sqlite3_column_int(node, 8) : -1,
                                 has_node ? (const char *) sqlite3_column_text(node, 2) : NULL,
                                 has_node ? sqlite3_column_int(node, 3) : -1, has_node ? sqlite3_column_int(node, 4) : 0,
                                 has_node ? (const char *) sqlite3_column_text(node, 5) : NULL,
                                 has_node ? (const char *) sqlite3_column_text(node, 6) : NULL,
                                 has_node ? (const char *) sqlite3_column_text(node, 7) : NULL);
        sqlite3_reset(node);
        const ggprof_rl_types *ty = types_for(db, &types, &n_types, x->pid, &g->types_from_trace);
        if (!ty) {
            snprintf(why, why_len, "out of memory");
            free(fused); /* its group was not counted */
            rc = -1;
            break;
        }
        ggprof_rl_cost_of(&x->node, ty, &x->cost);
        ggprof_rl_shape(x->shape, sizeof(x->shape), &x->node, ty);
        g->op_ns += x->total_ns;
        g->n++;
    }
    sqlite3_finalize(node);
    sqlite3_finalize(fop);
    sqlite3_finalize(be);
    sqlite3_finalize(be_any);
    free(types);
    for (size_t j = 0; j < g->n; j++) free(keys[j].fused);
    free(keys);
    ev_free(&t);
    if (rc == 0) {
        if (sqlite3_prepare_v2(db, "SELECT COALESCE(sum(duration_ns), 0) FROM events", -1, &st, NULL) == SQLITE_OK &&
            sqlite3_step(st) == SQLITE_ROW) {
            g->all_ns = (uint64_t) sqlite3_column_int64(st, 0);
        }
        sqlite3_finalize(st);
    }
    if (rc == 0 && per_record) {
        for (size_t k = 0; k < g->n_rec; k++) g->rec_group[k] = ev_to_g[g->rec_group[k]];
    }
    free(ev_to_g);
    if (rc) ggprof_rl_groups_free(g);
    return rc;
}

int ggprof_rl_groups_load(sqlite3 *db, ggprof_rl_groups *g, char *why, size_t why_len) {
    return groups_load(db, g, 0, why, why_len);
}

int ggprof_rl_groups_load_records(sqlite3 *db, ggprof_rl_groups *g, char *why, size_t why_len) {
    return groups_load(db, g, 1, why, why_len);
}

const ggprof_rl_group *ggprof_rl_group_of(const ggprof_rl_groups *g, int64_t seq) {
    size_t lo = 0, hi = g->n_rec;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (g->rec_seq[mid] < seq) lo = mid + 1;
        else hi = mid;
    }
    return lo < g->n_rec && g->rec_seq[lo] == seq ? &g->v[g->rec_group[lo]] : NULL;
}

void ggprof_rl_groups_free(ggprof_rl_groups *g) {
    free(g->v);
    free(g->rec_seq);
    free(g->rec_group);
    memset(g, 0, sizeof(*g));
}

int ggprof_rank_opts_parse(ggprof_rank_opts *o, int argc, char **argv, const char *cmd) {
    memset(o, 0, sizeof(*o));
    o->n_rows = 20;
    o->format = GGPROF_FMT_TABLE;
    const ggprof_opt opts[] = {
        { "-n", NULL, GGPROF_OPT_COUNT, &o->n_rows, NULL },
        { "--format", NULL, GGPROF_OPT_CALL, &o->format, ggprof_format_opt },
        { "--roof", NULL, GGPROF_OPT_CALL, &o->roofs, ggprof_roofs_opt },
        { "--roof-file", NULL, GGPROF_OPT_CALL, &o->roofs, ggprof_roofs_opt },
    };
    ggprof_args a = { opts, (int) (sizeof(opts) / sizeof(opts[0])), &o->trace, 1, 0, "one trace at a time ('%s' is a second)", 0, 0 };
    int rc = ggprof_parse_args(argc, argv, &a);
    if (rc) return rc;
    if (!o->trace) return ggprof_fail(GGPROF_EXIT_USAGE, "no trace given; usage: ggprof %s TRACE [-n N]", cmd);
    return 0;
}

int ggprof_rank_rows(const ggprof_rank_opts *o, int by_shape, ggprof_rl_groups *g, ggprof_rl_row **rows, size_t *n) {
    char why[512];
    sqlite3 *db;
    int rc = ggprof_trace_open(o->trace, &db, why, sizeof(why));
    if (rc) return ggprof_fail(rc, "%s", why);
    if (ggprof_rl_groups_load(db, g, why, sizeof(why)) != 0) {
        sqlite3_close(db);
        return ggprof_fail(GGPROF_EXIT_INTERNAL, "'%s': %s", o->trace, why);
    }
    sqlite3_close(db);
    if (ggprof_rl_rollup(g, &o->roofs, by_shape, rows, n) != 0) {
        ggprof_rl_groups_free(g);
        return ggprof_fail(GGPROF_EXIT_INTERNAL, "out of memory");
    }
    return 0;
}
