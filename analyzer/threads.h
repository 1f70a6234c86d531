/* CPU threads: per op and thread busy and barrier wait and the imbalance between threads (record --threads's
 * op_threads; otherwise thread 0's busy time and its barrier waits, the slowest thread's lead over it), and per
 * process the threads ggml used against the CPUs it could use (docs/analysis.md, "Threads"); and each thread's
 * slices (its regions, llama_decode calls and idle spans) that the exports draw. */
#ifndef GGPROF_THREADS_H
#define GGPROF_THREADS_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef struct {
    char    op[48];
    int64_t count;
    int64_t busy_ns;        /* thread 0 computing it (its barrier waits inside the op taken out) */
    int64_t wait_ns;        /* thread 0's barrier waits inside the op */
    int64_t barrier_ns;     /* thread 0 in the barrier after it: the slowest thread's lead over thread 0 */
    int64_t max_barrier_ns; /* the worst one */
} ggprof_thread_op;

/* record --threads: an op on every thread of its computes, from op_threads (sums over the op's rows). */
#define GGPROF_THREADS_MAX 256 /* op_threads rows of a higher thread number are not read (the engine has 65) */
typedef struct {
    char     op[48];
    int64_t  count;        /* thread 0's rows */
    int64_t *busy_ns;      /* [n_threads]: each thread's busy time in the op */
    int64_t *wait_ns;      /* [n_threads]: each thread's barrier waits in and after the op */
    int64_t  imbalance_ns; /* slowest minus fastest arrival, summed over the op's barriers */
} ggprof_thread_op_all;

typedef struct {
    int     pid;
    int     threads_used;   /* the most ggml_cplan.n_threads; -1: unknown */
    int     cpus_allowed;   /* affinity; -1: unknown */
    double  cpu_quota;      /* cgroup v2 cpu.max in CPUs; -1: none */
    int     oversubscribed; /* 1: more threads than CPUs (allowed or quota), 0: not, -1: unknown */
    int64_t cpu_ns, runq_ns, nivcsw, graphs; /* all threads on a CPU, waiting for one; involuntary switches (-1) */
    ggprof_thread_op *ops;  /* by barrier_ns, largest first; the (other) row holds barriers after no op */
    size_t  n_ops;
    int64_t barrier_ns;     /* the ops' barrier_ns added up: every cpu_barrier record of the pid */
    /* record --threads (op_threads has rows of the pid): every thread's figures, by imbalance_ns, largest first */
    int     n_threads;      /* 0: no op_threads rows; else the highest thread number + 1 */
    ggprof_thread_op_all *all;
    size_t  n_all;
    int64_t imbalance_ns;   /* all's imbalance_ns added up */
} ggprof_threads_summary_t;

/* Fills out for pid. 0, or -1 on a database error. */
int  ggprof_threads_summary(sqlite3 *db, int pid, ggprof_threads_summary_t *out);
void ggprof_threads_summary_free(ggprof_threads_summary_t *s);

/* report --format json's "threads": a list, an object per process report's section shows. */
void ggprof_threads_json(FILE *f, sqlite3 *db);

/* report's "Threads" section, for each process record measured (nothing for a trace without processes_time). */
void ggprof_threads_print(FILE *f, sqlite3 *db);

/* A slice on a thread of the program: a region (GGPROF_TS_REGION: the program's, include/ggprof.h, or at depth
 * GGPROF_LLAMA_REGION_DEPTH a call of llama.cpp the engine timed, schema/llama_regions.h), a llama_decode call
 * (GGPROF_TS_BATCH) or the thread blocked (GGPROF_TS_IDLE), from the tables regions, batches and thread_idle. What export --chrome's thread rows and the HTML page's thread
 * lanes show. */
enum { GGPROF_TS_REGION = 0, GGPROF_TS_BATCH = 1, GGPROF_TS_IDLE = 2 };
typedef struct {
    int64_t pid, tid, start_ns, dur_ns, order;
    int     what;
    int64_t v[5]; /* region: depth; batch: batch_id, n_tokens, n_seqs, n_outputs, status */
    char   *name; /* region: its name; batch: the API called; NULL when none */
} ggprof_thread_slice;

typedef struct {
    ggprof_thread_slice *v;
    size_t               n, cap;
} ggprof_thread_slices;

/* Every thread slice of db (a table or column an older trace lacks: none; a slice whose times are negative or
 * overflow: left out), sorted by pid, tid, start, longest first (a parent before what it holds). Returns 0, or -1
 * (s left empty) with a one-line reason: out of memory, or a query that failed otherwise. */
int  ggprof_thread_slices_load(sqlite3 *db, ggprof_thread_slices *s, char *why, size_t why_len);
void ggprof_thread_slices_free(ggprof_thread_slices *s);

#endif
