/* The whole run accounted for, per process (docs/findings.md): its wall time cut into categories that add up to
 * it, from what the trace has (records, graphs, splits, batches, the process's start). What `report` prints and
 * writes (--format json, "accounting") and what the findings rules read. */
#ifndef GGPROF_ACCOUNTING_H
#define GGPROF_ACCOUNTING_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "request_time.h"

#define GGPROF_ACC_MAX_CATS 24

/* The categories' names, in the order the accounting takes them: the keys of JSON "categories", the slices' names. */
#define GGPROF_ACC_STARTUP     "startup"
#define GGPROF_ACC_LOADING     "loading"
#define GGPROF_ACC_CONTEXT     "context_setup"
#define GGPROF_ACC_COMPUTE     "compute." /* then the backend's label: "compute.CPU" */
#define GGPROF_ACC_COPIES      "copies"
#define GGPROF_ACC_GRAPH_BUILD "graph_build"
#define GGPROF_ACC_HOST_GAPS   "host_gaps"
#define GGPROF_ACC_IDLE        "idle"
#define GGPROF_ACC_OTHER       "other"

typedef struct {
    char    name[72]; /* one of GGPROF_ACC_STARTUP... */
    int64_t ns;
} ggprof_acc_cat;

/* A stretch of the run cut into what it was spent on (time to first token, generation per token). */
typedef struct {
    int64_t ns, compute_ns, graph_build_ns, host_ns, idle_ns;
} ggprof_acc_span;

struct ggprof_acc_ivls; /* the intervals the categories were cut from (accounting_ivls.h), kept for the slices */

typedef struct {
    int32_t        pid;
    int64_t        start_ns, end_ns, wall_ns; /* fork to exit as record measured them (processes_time), else the
                                                 process's start (or first record) to its last record */
    int            start_known;               /* start_ns is the process's start (processes_time or processes) */
    int            exit_known;                /* end_ns is its exit (processes_time) */
    int            tid;                       /* the thread whose idle counts: the one calling llama_decode (else
                                                 the one with the most records, else the main thread) */
    int64_t        first_use_ns;              /* ggml first used: the first buffer, record, graph or batch */
    int64_t        first_graph_ns, last_graph_end_ns; /* 0 when no graph */
    int64_t        graphs_ns, n_graphs, copies_ns, graph_build_ns, host_gaps_ns, idle_ns;
    int64_t        before_first_graph_ns;     /* the start to the first graph (the loading rule's figure) */
    int64_t        before_setup_ns;           /* the start to the set-up (llama.cpp's first set-up call, else ggml's
                                                 first use): the category startup, JSON "startup_ns" */
    int64_t        loading_ns, context_ns;    /* the categories loading, context_setup */
    int            setup_measured;            /* loading and context_setup are llama.cpp's set-up calls, timed */
    int64_t        llama_load_ns, llama_total_ns; /* llama.cpp's "load time" and "total time" as it computes them;
                                                     -1: not known */
    int64_t        batch_ns;                  /* time inside llama_decode (BATCH records) */
    int64_t        prompt_ns, generation_ns;  /* batch time of batches of more than one token, of one token (as
                                                 llama.cpp counts its prompt eval and eval) */
    int64_t        n_prompt_batches, n_prompt_tokens, n_gen_batches;
    int64_t        first_token_ns;            /* the end of the first batch that asked for outputs; 0: none */
    ggprof_acc_span ttft;                     /* the start to first_token_ns: ns less startup/loading/context */
    ggprof_acc_span gen;                      /* the first one-token decode's start to the last one's end */
    int64_t        minflt, majflt;            /* page faults of the whole run (rusage); -1: not measured */
    int64_t        weights_bytes, n_weights;  /* the weights buffers loaded before the first graph */
    ggprof_acc_cat cats[GGPROF_ACC_MAX_CATS]; /* they sum to wall_ns */
    size_t         n_cats;
    ggprof_req_times requests;                /* the requests it answered (request_time.h); none: not a server */
    struct ggprof_acc_ivls *ivls;             /* owned; freed by ggprof_accounting_free */
} ggprof_acc_proc;

typedef struct {
    ggprof_acc_proc *procs;
    size_t           n_procs;
} ggprof_accounting;

/* Computes every process's accounting (accounting.c). A table or column the trace lacks counts as empty (an older
 * trace); any other SQL error fails the load. Returns 0, or -1 with a one-line reason. */
int  ggprof_accounting_load(sqlite3 *db, ggprof_accounting *a, char *why, size_t why_len);
void ggprof_accounting_free(ggprof_accounting *a);
/* The accounting as a JSON array (accounting_print.c), one object per process ({"pid", "wall_ns", "start_known", "categories",
 * "phases", "ttft", "per_token", "requests"}), indented by indent; json_flags: ggprof_json_put's (GGPROF_JSON_HTML inside an HTML page). What
 * report --format json and the HTML page write. */
void ggprof_accounting_json(FILE *out, const ggprof_accounting *a, const char *indent, unsigned json_flags);
/* report's "Where the time went": per process the categories in ms and %, the phases, TTFT, per token, and a
 * table of its requests (the ten with the longest time to first token). */
void ggprof_accounting_print(FILE *out, const ggprof_accounting *a);
/* A stretch of a process's wall time and the category it went to: name is one of p->cats' names (it lives as long
 * as p), or "other" for time no category took (only when GGPROF_ACC_MAX_CATS cut the categories short). */
typedef struct {
    int64_t     start_ns, end_ns;
    const char *name;
} ggprof_acc_slice;

/* The categories of p laid on its wall time (accounting_slices.c), from the intervals they were cut from (graphs, llama_decode calls,
 * the thread's idle time, llama.cpp's set-up calls): slices in time order that tile [start_ns, end_ns) with no gap
 * and no overlap, adjacent slices of one category merged, each category's slices summing to its ns. Compute per
 * backend and copies share each graph's time in the proportions of their totals (the accounting has their sums,
 * not their instants). *out: malloc'ed, the caller frees it. Returns 0, or -1 out of memory. */
int ggprof_accounting_slices(const ggprof_acc_proc *p, ggprof_acc_slice **out, size_t *n);
/* The category's time in p, 0 when it has none. */
int64_t ggprof_accounting_cat(const ggprof_acc_proc *p, const char *name);

#endif
