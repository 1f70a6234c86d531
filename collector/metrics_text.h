/* The Prometheus text exposition format (0.0.4) and OpenMetrics 1.0, written into a growing buffer: the one writer
 * of record --metrics (live.c), tested on hostile strings by tests/unit/test_metrics.c. */
#ifndef GGPROF_METRICS_TEXT_H
#define GGPROF_METRICS_TEXT_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    char  *buf;
    size_t len, cap;
    int    openmetrics; /* 1: OpenMetrics (counter families named without _total, # EOF at the end) */
    int    oom;         /* an allocation failed: the output is incomplete */
} ggprof_metrics_out;

/* A label: its name (a fixed identifier of ggprof's) and its value (any bytes: escaped, made valid UTF-8). */
typedef struct {
    const char *name, *value;
} ggprof_metric_label;

enum ggprof_metric_type { GGPROF_METRIC_COUNTER, GGPROF_METRIC_GAUGE, GGPROF_METRIC_HISTOGRAM };

/* # HELP and # TYPE of a family. name: the sample name without _total (counters get it on their samples), in base
 * units (seconds, bytes). */
void ggprof_metrics_family(ggprof_metrics_out *o, const char *name, int type, const char *help);
/* One sample: name + suffix ("_total", "_bucket", "_sum", "_count" or ""), labels, then an extra label (le) if
 * extra_name is not NULL, and the value. */
void ggprof_metrics_sample(ggprof_metrics_out *o, const char *name, const char *suffix, const ggprof_metric_label *l,
                           int n_labels, const char *extra_name, const char *extra_value, double value);
/* A histogram's samples: cumulative _bucket{le} for each bound and +Inf, then _sum and _count. counts[i]: the
 * observations in (bounds[i-1], bounds[i]]; counts[n_bounds]: those above the last bound. */
void ggprof_metrics_histogram(ggprof_metrics_out *o, const char *name, const ggprof_metric_label *l, int n_labels,
                              const double *bounds, const uint64_t *counts, int n_bounds, double sum);
/* Ends the exposition (OpenMetrics: # EOF). */
void ggprof_metrics_end(ggprof_metrics_out *o);
/* value escaped as a label value ('\\', '"' and newline escaped; other control characters and bytes that are not
 * valid UTF-8 become U+FFFD), appended to o. */
void ggprof_metrics_label_value(ggprof_metrics_out *o, const char *value);

#endif
