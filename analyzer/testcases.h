/* The distinct op cases of a trace, as ggml's test-backend-ops reads them (--test-file): export and replay. */
#ifndef GGPROF_TESTCASES_H
#define GGPROF_TESTCASES_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "wire.h"

/* One case: what test-backend-ops needs to build the op alone (op and types as the recorded ggml's enum values,
 * shapes, strides, op params), and what the trace says of it. */
typedef struct {
    int32_t op_id, out_type, n_src;
    int64_t ne[4];
    int32_t op_params[GGPROF_N_OP_PARAMS];
    int32_t type_src[GGPROF_MAX_SRC];
    int64_t ne_src[GGPROF_MAX_SRC][4], nb_src[GGPROF_MAX_SRC][4];
    char    op[32], name[GGPROF_MAX_NAME], backend[GGPROF_MAX_NAME];
    int64_t count;    /* OP records of the case in the trace */
    double  total_ns; /* their time */
    double  share;    /* of all OP time, in % */
} ggprof_case;

/* What the trace has that test-backend-ops cannot replay: a fused pair (two ops computed as one), a node whose
 * op id is unknown (a trace read from JSON). */
typedef struct {
    char    what[96], why[96];
    int64_t count;
    double  total_ns, share;
} ggprof_case_skip;

typedef struct {
    ggprof_case      *v;
    size_t            n;
    ggprof_case_skip *skip;
    size_t            n_skip;
} ggprof_cases;

/* Loads the cases of db whose share of OP time is at least min_share %, largest first. Returns 0, or -1 with a
 * one-line reason. */
int  ggprof_cases_load(sqlite3 *db, double min_share, ggprof_cases *c, char *why, size_t why_len);
void ggprof_cases_free(ggprof_cases *c);

/* Writes one case as a line of test-backend-ops --test-file: "OP TYPE NE0..3 16 PARAMS... NSRC [TYPE NE0..3
 * NB0..3]... NAME BACKEND" (NAME: name, or the tensor's name when NULL; '-' when empty; BACKEND is the upstream profiler's
 * trailing column, which test-backend-ops reads past). */
void ggprof_case_write(FILE *f, const ggprof_case *c, const char *name);

#endif
