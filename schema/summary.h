/* The upstream profiler's per-op statistics and its console and text formats, without SQLite: shared by the
 * analyzer (fed from a trace database) and libggprof.so (fed from in-process records, the upstream profiler's C API). */
#ifndef GGPROF_SUMMARY_H
#define GGPROF_SUMMARY_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Per (type, backend, name) statistics, as the upstream profiler aggregates its records; sorted by total time. */
typedef struct {
    int      type, backend_id;
    char     name[64];
    char     backend[64];
    uint64_t total_ns, min_ns, max_ns, bytes;
    int64_t  count;
    int64_t  rep_ne_src[3][4]; /* shapes of the first record's first three sources */
    double   traffic; /* report's GB/s: bytes read and written under the analyzer's roofline model, summed over the
                       * OP records (what the HTML page and top-ops divide by the time); < 0 when one record's are
                       * unknown or the group is no op; set by the analyzer, never printed in the upstream formats */
} ggprof_op_stat;

typedef struct {
    ggprof_op_stat *v;
    size_t          n, cap, last;
    uint64_t        grand_total_ns;
    int64_t         n_records;
} ggprof_op_stats;

/* Adds one record; returns its group when the group is new (the caller may fill rep_ne_src), else NULL. */
ggprof_op_stat *ggprof_op_stats_add(ggprof_op_stats *s, int type, int backend_id, const char *name, uint64_t dur_ns,
                                    uint64_t bytes, int *is_new);
/* Sorts the groups by total time (ties by type, backend, name, so outputs are stable). */
void ggprof_op_stats_sort(ggprof_op_stats *s);
void ggprof_op_stats_free(ggprof_op_stats *s);

/* "[4096, 4096]" as the upstream profiler formats a shape: trailing dimensions of 1 dropped; "" for an empty shape. */
void ggprof_fmt_ne(char *buf, size_t len, const int64_t ne[4]);
/* "12.34 GB/s" or "1.23 TB/s" for bytes moved in ns; "" when either is 0. */
void ggprof_fmt_bandwidth(char *buf, size_t len, uint64_t bytes, uint64_t ns);

/* The upstream profiler's console summary, then time per backend (GGML_PROFILE's console output, collect's): its
 * bandwidth is the output's bytes over the time. */
void ggprof_print_summary(FILE *fp, const ggprof_op_stats *s);
void ggprof_print_backends(FILE *fp, const ggprof_op_stats *s);
/* The same two sections as `ggprof report` prints them: the bandwidth column is "traffic", each group's traffic
 * (bytes read and written) over its time, empty where traffic < 0. */
void ggprof_print_report_summary(FILE *fp, const ggprof_op_stats *s);
/* The upstream profiler's three-section text report. */
void ggprof_write_text_report(FILE *fp, const ggprof_op_stats *s);

#endif
