/* The Prometheus text exposition format and OpenMetrics, escaped as the formats say (metrics_text.h). */
#include "metrics_text.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "v3_format.h"

static void put(ggprof_metrics_out *o, const char *s, size_t n) {
    if (o->oom) return;
    if (o->len + n + 1 > o->cap) {
        size_t cap = o->cap ? o->cap : 4096;
        while (cap < o->len + n + 1) cap *= 2;
        char *b = realloc(o->buf, cap);
        if (!b) {
            o->oom = 1;
            return;
        }
        o->buf = b, o->cap = cap;
    }
    memcpy(o->buf + o->len, s, n);
    o->len += n;
    o->buf[o->len] = 0;
}

static void puts_(ggprof_metrics_out *o, const char *s) { put(o, s, strlen(s)); }

/* Numbers as both formats read them: integers exactly, the rest with 17 significant digits, and +Inf, -Inf, NaN. */
static void put_number(ggprof_metrics_out *o, double v) {
    char b[40];
    if (isnan(v)) {
        puts_(o, "NaN");
    } else if (isinf(v)) {
        puts_(o, v > 0 ? "+Inf" : "-Inf");
    } else if (v == floor(v) && fabs(v) < 9007199254740992.0) {
        snprintf(b, sizeof(b), "%.0f", v);
        puts_(o, b);
    } else {
        snprintf(b, sizeof(b), "%.17g", v);
        puts_(o, b);
    }
}

void ggprof_metrics_label_value(ggprof_metrics_out *o, const char *value) {
    static const char fffd[] = "\xef\xbf\xbd";
    const char *p = value ? value : "";
    while (*p) {
        unsigned char c = (unsigned char) *p;
        size_t run = 0;
        /* plain printable ASCII in one piece */
        while (p[run] && (unsigned char) p[run] >= 0x20 && (unsigned char) p[run] < 0x7f && p[run] != '\\' && p[run] != '"') run++;
        if (run) {
            put(o, p, run);
            p += run;
            continue;
        }
        if (c == '\\') {
            puts_(o, "\\\\");
            p++;
        } else if (c == '"') {
            puts_(o, "\\\"");
            p++;
        } else if (c == '\n') {
            puts_(o, "\\n");
            p++;
        } else if (c >= 0x80 && (run = ggprof_utf8_len(p)) != 0) {
            put(o, p, run);
            p += run;
        } else { /* another control character, or a byte that begins no valid UTF-8 sequence */
            put(o, fffd, 3);
            p++;
        }
    }
}

void ggprof_metrics_family(ggprof_metrics_out *o, const char *name, int type, const char *help) {
    static const char *const types[] = { "counter", "gauge", "histogram" };
    puts_(o, "# HELP ");
    puts_(o, name);
    if (type == GGPROF_METRIC_COUNTER && !o->openmetrics) puts_(o, "_total");
    puts_(o, " ");
    puts_(o, help); /* ggprof's own text: no backslash, no newline */
    puts_(o, "\n# TYPE ");
    puts_(o, name);
    if (type == GGPROF_METRIC_COUNTER && !o->openmetrics) puts_(o, "_total");
    puts_(o, " ");
    puts_(o, types[type]);
    puts_(o, "\n");
    /* OpenMetrics: the unit, where the name ends with one */
    if (o->openmetrics) {
        size_t n = strlen(name);
        const char *unit = n > 8 && strcmp(name + n - 8, "_seconds") == 0 ? "seconds"
                         : n > 6 && strcmp(name + n - 6, "_bytes") == 0   ? "bytes"
                                                                          : NULL;
        if (unit) {
            puts_(o, "# UNIT ");
            puts_(o, name);
            puts_(o, " ");
            puts_(o, unit);
            puts_(o, "\n");
        }
    }
}

void ggprof_metrics_sample(ggprof_metrics_out *o, const char *name, const char *suffix, const ggprof_metric_label *l,
                           int n_labels, const char *extra_name, const char *extra_value, double value) {
    puts_(o, name);
    puts_(o, suffix);
    if (n_labels || extra_name) {
        puts_(o, "{");
        for (int i = 0; i < n_labels; i++) {
            if (i) puts_(o, ",");
            puts_(o, l[i].name);
            puts_(o, "=\"");
            ggprof_metrics_label_value(o, l[i].value);
            puts_(o, "\"");
        }
        if (extra_name) {
            if (n_labels) puts_(o, ",");
            puts_(o, extra_name);
            puts_(o, "=\"");
            ggprof_metrics_label_value(o, extra_value);
            puts_(o, "\"");
        }
        puts_(o, "}");
    }
    puts_(o, " ");
    put_number(o, value);
    puts_(o, "\n");
}

void ggprof_metrics_histogram(ggprof_metrics_out *o, const char *name, const ggprof_metric_label *l, int n_labels,
                              const double *bounds, const uint64_t *counts, int n_bounds, double sum) {
    uint64_t cum = 0;
    char le[40];
    for (int i = 0; i <= n_bounds; i++) {
        cum += counts[i];
        if (i < n_bounds) {
            snprintf(le, sizeof(le), "%g", bounds[i]);
        } else {
            snprintf(le, sizeof(le), "+Inf");
        }
        ggprof_metrics_sample(o, name, "_bucket", l, n_labels, "le", le, (double) cum);
    }
    ggprof_metrics_sample(o, name, "_sum", l, n_labels, NULL, NULL, sum);
    ggprof_metrics_sample(o, name, "_count", l, n_labels, NULL, NULL, (double) cum);
}

void ggprof_metrics_end(ggprof_metrics_out *o) {
    if (o->openmetrics) puts_(o, "# EOF\n");
    put(o, "", 0);
}
