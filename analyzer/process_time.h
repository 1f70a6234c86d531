/* The whole run of a process as record measured it (processes_time, thread_idle, buffers): for the accounting. */
#ifndef GGPROF_PROCESS_TIME_H
#define GGPROF_PROCESS_TIME_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
    int     tid;
    char    name[32];
    int64_t idle_ns, n_runs; /* blocked, in runs of at least two samples (docs/trace-database.md) */
} ggprof_thread_idle;

/* A buffer the weights were loaded into: allocated at alloc_ns, in use by ready_ns (the process's first graph). The
 * tensor copies into it are not timed: load_ns is an upper bound, mb_s a lower bound. */
typedef struct {
    int64_t buffer_id, size, alloc_ns, ready_ns, load_ns;
    char    name[64];
    double  mb_s;
} ggprof_buffer_load;

typedef struct {
    int     has;                          /* 0: the trace has no processes_time row for the pid (older trace) */
    int64_t fork_ns, exit_ns, wall_ns;    /* record's fork to wait4 (sampled children: first to last seen) */
    int     waited, exit_status;          /* exit_status -1: unknown */
    int64_t utime_ns, stime_ns, minflt, majflt, nvcsw, nivcsw, maxrss_kib; /* -1: unknown */
    int     n_cpus_allowed, n_threads;    /* -1: unknown */
    double  cpu_quota;                    /* CPUs; -1: none */
    int64_t first_graph_ns, load_ns;      /* -1: no graph; load_ns: fork to the first graph */
    ggprof_thread_idle *idle;             /* the threads that call into ggml, and the main thread */
    size_t  n_idle;
    ggprof_buffer_load *buffers;          /* weights buffers, by allocation time */
    size_t  n_buffers;
} ggprof_process_times;

/* Fills out for pid from db. 0, or -1 on a database error (out->has 0 when the trace lacks the tables). */
int  ggprof_accounting_times(sqlite3 *db, int pid, ggprof_process_times *out);
void ggprof_process_times_free(ggprof_process_times *t);

#endif
