/* The roofline model: the bytes each ggml op reads and writes and the FLOPs it does, and the device roofs. */
#ifndef GGPROF_ROOFLINE_H
#define GGPROF_ROOFLINE_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "cli.h"
#include "wire.h"

#define GGPROF_RL_MAX_SRC   10 /* GGML_MAX_SRC */
#define GGPROF_RL_MAX_TYPES 64

/* ---------------------------------------------------------------- types */

/* The sizes of ggml types by id: type_size bytes hold blck_size elements; type_size 0 marks an unknown id. */
typedef struct {
    int64_t type_size[GGPROF_RL_MAX_TYPES];
    int64_t blck_size[GGPROF_RL_MAX_TYPES];
    char    name[GGPROF_RL_MAX_TYPES][16];
} ggprof_rl_types;

/* ggml 0.23's types with their ids: what a JSON profile's ids are read as (JSON carries ids, not names). */
void ggprof_rl_types_builtin(ggprof_rl_types *t);
/* ggml 0.23's sizes of the type called name ("q4_0"); returns 0, or -1 when ggml 0.23 has no such type. */
int ggprof_rl_type_by_name(const char *name, int64_t *type_size, int64_t *blck_size);
/* The types of process pid as its ggml named them (the trace's ggml_types table), over the built-in table;
 * a row without sizes takes ggml 0.23's sizes for its name. Returns the number of rows read from the trace
 * (0: a JSON profile, built-in ids only), or -1 on an SQL error. */
int ggprof_rl_types_load(sqlite3 *db, int32_t pid, ggprof_rl_types *t);

/* ---------------------------------------------------------------- the model */

/* What the model reads of one record: the op and its output and source tensors, as the trace stores them. */
typedef struct {
    char    op[48];     /* ggml op name: "MUL_MAT" */
    char    fused[64];  /* "RMS_NORM+MUL" when one record covers two fused nodes, else "" */
    char    sub_op[32]; /* unary or GLU op name ("SILU", "SWIGLU"), else "" */
    int64_t ne[4];
    int     out_type;
    int     n_src;
    int64_t ne_src[GGPROF_RL_MAX_SRC][4];
    int     type_src[GGPROF_RL_MAX_SRC];
    int32_t op_params[16];
} ggprof_rl_node;

/* The cost of one execution. Bytes are each source read once and the output written once (the compulsory
 * traffic; a cache too small for a reused operand costs more), at the tensors' types, quantized blocks
 * included. */
typedef struct {
    double flops;
    double bytes_read, bytes_written;
    int    flops_known; /* 0 when the op's FLOPs are not modelled (flops is 0 then) */
    int    bytes_known; /* 0 when a tensor's type has no known size */
    int    f16;         /* a matrix product on F16/BF16 weights (K for attention): the F16 compute roof applies */
} ggprof_rl_cost;

void ggprof_rl_cost_of(const ggprof_rl_node *n, const ggprof_rl_types *t, ggprof_rl_cost *c);

/* ---------------------------------------------------------------- roofs */

typedef struct {
    char   backend[64];                /* the backend's name in the trace: "CPU", "BLAS", "CUDA0" */
    double gbps, gflops, gflops_f16;   /* gflops_f16 0: the F32 roof applies to F16 products too */
} ggprof_roof;

typedef struct {
    ggprof_roof v[32];
    size_t      n;
} ggprof_roofs;

/* "BACKEND=GBPS,GFLOPS[,GFLOPS_F16]"; a later roof for the same backend replaces the earlier one.
 * Returns 0, or -1 with a reason naming the bad value. */
int ggprof_roof_parse(ggprof_roofs *r, const char *spec, char *why, size_t why_len);
/* A file of such lines ('#' starts a comment), as 'ggprof calibrate -o' writes it. */
int ggprof_roofs_read(ggprof_roofs *r, const char *path, char *why, size_t why_len);
/* Takes "--roof SPEC" or "--roof-file FILE" at argv[*i] for any command: returns 1 (consumed, *i moved to the
 * value), 0 (not a roof option) or -1 (bad value, reason in why). */
/* Option callbacks for ggprof_parse_args (schema/cli.h): --roof BACKEND=... and --roof-file FILE into a
 * ggprof_roofs; --format table|csv|json into an int (ggprof_format). */
int ggprof_roofs_opt(void *roofs, const char *option, const char *value);
int ggprof_format_opt(void *format, const char *option, const char *value);
/* The roof of a backend (names compared without case), or NULL. */
const ggprof_roof *ggprof_roofs_find(const ggprof_roofs *r, const char *backend);
/* One line per roof ("roof CPU: 20.00 GB/s, 100.00 GFLOP/s, F16 80.00 GFLOP/s"), or how to give one. */
void ggprof_roofs_describe(FILE *f, const ggprof_roofs *r);
/* Nanoseconds one execution takes at the roof: max(flops / compute roof, bytes / bandwidth roof); 0 when the
 * cost's bytes are unknown. */
double ggprof_rl_roof_ns(const ggprof_roof *r, const ggprof_rl_cost *c);

/* ---------------------------------------------------------------- a trace's ops */

/* The OP records of one node description on one backend, with the cost of one execution. */
typedef struct {
    int32_t        pid;
    char           backend[64];
    char           label[64];  /* the op, or the fused pair "RMS_NORM+MUL" */
    char           shape[160]; /* "q4_0[512,1408] f32[512,2]": the first two sources' types and shapes */
    int64_t        count;
    uint64_t       total_ns, min_ns, max_ns;
    int64_t        first_seq; /* the first record's place in the trace: a stable order */
    ggprof_rl_node node;
    ggprof_rl_cost cost;
} ggprof_rl_group;

typedef struct {
    ggprof_rl_group *v;
    size_t           n;
    uint64_t         op_ns, all_ns; /* time of OP records; of every record (OP, COPY, SYNC) */
    int              types_from_trace; /* 1 when the trace named its types (a database), 0 built-in ids only */
    /* ggprof_rl_groups_load_records only (else NULL, 0): each OP record's events rowid, ascending, and its group
     * (an index into v). */
    int64_t         *rec_seq;
    uint32_t        *rec_group;
    size_t           n_rec;
    char             coverage[320]; /* ggprof_rank_rows: the trace's coverage line (output.h), "" if nothing lost */
} ggprof_rl_groups;

/* Reads every OP record of db, grouped by node description and backend, and costs each group.
 * Returns 0, or -1 with the SQL error in why. */
int  ggprof_rl_groups_load(sqlite3 *db, ggprof_rl_groups *g, char *why, size_t why_len);
/* The same, and which group each OP record is in (rec_seq, rec_group): for a view that shows records one by one
 * with the cost top-ops gives their group (export --html). */
int  ggprof_rl_groups_load_records(sqlite3 *db, ggprof_rl_groups *g, char *why, size_t why_len);
/* The same for the OP records whose events rowid's bit is set in want (n_want bits): what a sampled view shows. */
int  ggprof_rl_groups_load_some(sqlite3 *db, ggprof_rl_groups *g, const uint8_t *want, int64_t n_want, char *why,
                                size_t why_len);
/* The group of the OP record whose events rowid is seq (ggprof_rl_groups_load_records), or NULL. */
const ggprof_rl_group *ggprof_rl_group_of(const ggprof_rl_groups *g, int64_t seq);
void ggprof_rl_groups_free(ggprof_rl_groups *g);

/* Fills node from a record's stored fields (the JSON arrays of the records view). A sub-op without a name (a
 * JSON profile's) is named from its id as ggml 0.23 numbers them. */
void ggprof_rl_node_from_text(ggprof_rl_node *n, const char *op, const char *fused, const char *sub_op,
                              int sub_op_id, const char *ne, int out_type, int n_src, const char *ne_src, const char *type_src,
                              const char *op_params);
/* The same from a node as the wire carries it, for a JSON profile read straight into report's statistics (no
 * database): what ggprof_rl_node_from_text gives for the columns its import would store. */
void ggprof_rl_node_from_msg(ggprof_rl_node *n, const char *op, const char *fused, const ggprof_msg_node *m);
/* "q4_0[512,1408] f32[512,2]": the types and shapes of a node's first two sources (trailing 1s dropped). */
void ggprof_rl_shape(char *buf, size_t len, const ggprof_rl_node *n, const ggprof_rl_types *t);

/* Groups summed over the nodes that share an op and a backend (and, by_shape, the sources' and output's
 * shapes), with their time at the backend's roof when roofs knows it. */
typedef struct {
    char     label[64], backend[64];
    char     shape[160], out_shape[96]; /* by_shape: the sources' types and shapes, the output's shape */
    int64_t  count, first_seq;
    uint64_t total_ns, min_ns, max_ns;
    double   flops, bytes, bytes_written; /* summed over every execution */
    int      flops_known, bytes_known;    /* 0 when any node's FLOPs (bytes) are not known */
    int      has_roof;                    /* roof_* are set: the backend has a roof and the bytes are known */
    double   roof_ns, roof_mem_ns, roof_cmp_ns; /* sum of max(mem, compute), of mem, of compute */
    int      mul_mat_id;                  /* holds MUL_MAT_ID nodes (their expert bound applies) */
} ggprof_rl_row;

/* A row's rates: achieved GB/s, GFLOP/s, FLOP/byte and roof% (time at the roof / time taken); NAN where
 * unknown. */
void ggprof_rl_row_rates(const ggprof_rl_row *r, double *gbps, double *gflops, double *flop_per_byte, double *roof_pct);

/* Returns 0 with *rows (caller frees) in the groups' order, or -1 when out of memory. */
int ggprof_rl_rollup(const ggprof_rl_groups *g, const ggprof_roofs *roofs, int by_shape, ggprof_rl_row **rows,
                     size_t *n);

/* The options every ranking command takes: TRACE [-n N] [--format table|csv|json] [--roof ...] [--roof-file F].
 * Returns 0, or the exit code after printing a one-line error that names the bad value. */
typedef struct {
    const char   *trace;
    long          n_rows; /* 0: all */
    int           format; /* ggprof_format */
    ggprof_roofs  roofs;
    ggprof_window_opts window; /* --from, --to, --graphs, --process, --window */
} ggprof_rank_opts;
int ggprof_rank_opts_parse(ggprof_rank_opts *o, int argc, char **argv, const char *cmd);
/* Opens o->trace and rolls its OP records up into rows (per op and backend, or per shape too); the caller frees
 * rows and g. Returns 0, or the exit code after printing a one-line error. */
int ggprof_rank_rows(const ggprof_rank_opts *o, int by_shape, ggprof_rl_groups *g, ggprof_rl_row **rows, size_t *n);

#endif
