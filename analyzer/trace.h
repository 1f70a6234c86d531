/* Opening any trace the analyzer reads: a trace database, or a version-3 JSON profile (gzip or not). */
#ifndef GGPROF_TRACE_H
#define GGPROF_TRACE_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Returns 0 with *db open, or an exit code (GGPROF_EXIT_USAGE for a bad file) with a one-line reason. */
int ggprof_trace_open(const char *path, sqlite3 **db, char *why, size_t why_len);

/* Per (type, backend, name) statistics, as the seed aggregates its records; sorted by total time. */
typedef struct {
    int      type, backend_id;
    char     name[64];
    char     backend[64];
    uint64_t total_ns, min_ns, max_ns, bytes;
    int64_t  count;
    int64_t  rep_ne_src[3][4]; /* shapes of the first record's first three sources */
} ggprof_op_stat;

typedef struct {
    ggprof_op_stat *v;
    size_t          n;
    uint64_t        grand_total_ns;
    int64_t         n_records;
} ggprof_op_stats;

int  ggprof_op_stats_load(sqlite3 *db, ggprof_op_stats *out);
/* The upstream profiler's console summary, then time per backend (what `ggprof report` prints first). */
void ggprof_print_summary(FILE *fp, const ggprof_op_stats *s);
void ggprof_print_backends(FILE *fp, const ggprof_op_stats *s);
void ggprof_op_stats_free(ggprof_op_stats *s);

/* "[4096, 4096]" as the seed formats a shape: trailing dimensions of 1 dropped; "" for an empty shape. */
void ggprof_fmt_ne(char *buf, size_t len, const int64_t ne[4]);
/* "12.34 GB/s" or "1.23 TB/s" for bytes moved in ns; "" when either is 0. */
void ggprof_fmt_bandwidth(char *buf, size_t len, uint64_t bytes, uint64_t ns);

#endif
