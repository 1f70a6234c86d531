/* The Prometheus exposition writer (collector/metrics_text.c) on hostile label values: quotes, backslashes, newlines,
 * control characters, UTF-8 and bytes that are not. With a file argument, writes its exposition there instead (for
 * promtool: tests/e2e/metrics.sh). */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "metrics_text.h"

static const char *const k_hostile[] = {
    "plain",
    "quote\"s and \\backslash\\ and\nnewline",
    "tab\there, cr\r, esc\x1b[31m",
    "UTF-8: \xc3\xa9t\xc3\xa9 \xe2\x86\x92 \xf0\x9f\x98\x80",
    "cut UTF-8 \xe2\x86 and a stray \x80 and overlong \xc0\xaf",
    "} ,le=\"1\" # not a comment",
};
#define N_HOSTILE (sizeof(k_hostile) / sizeof(k_hostile[0]))

static void write_all(ggprof_metrics_out *o) {
    static const double le[] = { 0.001, 0.01, 0.1 };
    ggprof_metrics_family(o, "ggml_op_seconds", GGPROF_METRIC_COUNTER, "Time of ggml ops.");
    for (size_t i = 0; i < N_HOSTILE; i++) {
        ggprof_metric_label l[] = { { "process", k_hostile[i] }, { "op", k_hostile[N_HOSTILE - 1 - i] } };
        ggprof_metrics_sample(o, "ggml_op_seconds", "_total", l, 2, NULL, NULL, 0.25 * (double) i);
    }
    ggprof_metrics_family(o, "llama_request_seconds", GGPROF_METRIC_HISTOGRAM, "Request latency.");
    for (size_t i = 0; i < N_HOSTILE; i++) {
        ggprof_metric_label l[] = { { "process", k_hostile[i] } };
        uint64_t counts[] = { 1, 2, 0, (uint64_t) i };
        ggprof_metrics_histogram(o, "llama_request_seconds", l, 1, le, counts, 3, 1.5);
    }
    ggprof_metrics_end(o);
}

static void escapes(void) {
    ggprof_metrics_out o = { 0 };
    ggprof_metrics_label_value(&o, k_hostile[1]);
    CHECK(o.buf && strcmp(o.buf, "quote\\\"s and \\\\backslash\\\\ and\\nnewline") == 0);
    o.len = 0;
    ggprof_metrics_label_value(&o, k_hostile[2]);
    CHECK(strcmp(o.buf, "tab\xef\xbf\xbdhere, cr\xef\xbf\xbd, esc\xef\xbf\xbd[31m") == 0);
    o.len = 0;
    ggprof_metrics_label_value(&o, k_hostile[3]);
    CHECK(strcmp(o.buf, k_hostile[3]) == 0); /* valid UTF-8 passes as it is */
    o.len = 0;
    ggprof_metrics_label_value(&o, k_hostile[4]);
    CHECK(strcmp(o.buf, "cut UTF-8 \xef\xbf\xbd\xef\xbf\xbd and a stray \xef\xbf\xbd and overlong \xef\xbf\xbd\xef\xbf\xbd") == 0);
    free(o.buf);
}

/* Every line of the output is a comment or NAME{...} VALUE with no raw newline inside a label value; the histogram's
 * buckets are cumulative and end with +Inf equal to _count. */
static void lines(void) {
    ggprof_metrics_out o = { 0 };
    write_all(&o);
    CHECK(!o.oom && o.buf);
    int samples = 0;
    for (char *line = o.buf; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
        if (*line == '#') continue;
        samples++;
        CHECK(strncmp(line, "ggml_op_seconds_total{", 22) == 0 || strncmp(line, "llama_request_seconds_", 22) == 0);
        /* the label block closes before the value, on this line */
        char *eol = strchr(line, '\n'), *close = strstr(line, "\"} ");
        CHECK(eol && close && close < eol);
    }
    CHECK_EQ_INT(samples, N_HOSTILE + N_HOSTILE * 6);
    CHECK(strstr(o.buf, "llama_request_seconds_bucket{process=\"plain\",le=\"+Inf\"} 3\n") != NULL);
    CHECK(strstr(o.buf, "llama_request_seconds_count{process=\"plain\"} 3\n") != NULL);
    CHECK(strstr(o.buf, "# TYPE ggml_op_seconds_total counter\n") != NULL);
    free(o.buf);
    ggprof_metrics_out om = { .openmetrics = 1 };
    write_all(&om);
    CHECK(strstr(om.buf, "# TYPE ggml_op_seconds counter\n# UNIT ggml_op_seconds seconds\n") != NULL);
    CHECK(om.len > 6 && strcmp(om.buf + om.len - 6, "# EOF\n") == 0);
    free(om.buf);
}

int main(int argc, char **argv) {
    if (argc == 3) { /* FILE text|openmetrics: the exposition, for promtool */
        ggprof_metrics_out o = { .openmetrics = strcmp(argv[2], "openmetrics") == 0 };
        write_all(&o);
        FILE *f = fopen(argv[1], "w");
        if (!f || fwrite(o.buf, 1, o.len, f) != o.len || fclose(f) != 0) return 1;
        free(o.buf);
        return 0;
    }
    int failures = 0;
    RUN(escapes);
    RUN(lines);
    return failures ? 1 : 0;
}
