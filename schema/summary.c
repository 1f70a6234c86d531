/* The upstream profiler's per-op statistics, console summary and text report, shared by ggprof and the engine. */
#include "summary.h"

#include "sort.h"
#include "v3_format.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

ggprof_op_stat *ggprof_op_stats_add(ggprof_op_stats *out, int type, int backend, const char *name, uint64_t dur,
                                    uint64_t bytes, int *is_new) {
    /* Few distinct groups (tens): a linear scan with a one-entry cache beats a hash table here. */
    ggprof_op_stat *s = NULL;
    *is_new = 0;
    if (out->n && out->v[out->last].type == type && out->v[out->last].backend_id == backend &&
        strcmp(out->v[out->last].name, name) == 0) {
        s = &out->v[out->last];
    }
    for (size_t i = 0; !s && i < out->n; i++) {
        if (out->v[i].type == type && out->v[i].backend_id == backend && strcmp(out->v[i].name, name) == 0) {
            s         = &out->v[i];
            out->last = i;
        }
    }
    if (!s) {
        if (out->n == out->cap) {
            size_t cap = out->cap ? out->cap * 2 : 64;
            ggprof_op_stat *v = realloc(out->v, cap * sizeof(*v));
            if (!v) return NULL;
            out->v   = v;
            out->cap = cap;
        }
        s = &out->v[out->last = out->n++];
        memset(s, 0, sizeof(*s));
        s->type       = type;
        s->backend_id = backend;
        s->min_ns     = UINT64_MAX;
        snprintf(s->name, sizeof(s->name), "%s", name);
        *is_new = 1;
    }
    s->total_ns += dur;
    s->bytes += bytes;
    s->count++;
    if (dur < s->min_ns) s->min_ns = dur;
    if (dur > s->max_ns) s->max_ns = dur;
    out->grand_total_ns += dur;
    out->n_records++;
    return *is_new ? s : NULL;
}

static int cmp_total(const void *a, const void *b) {
    const ggprof_op_stat *x = a, *y = b;
    if (x->total_ns != y->total_ns) return x->total_ns < y->total_ns ? 1 : -1;
    if (x->type != y->type) return x->type < y->type ? -1 : 1; /* compared, not subtracted: any int is valid input */
    if (x->backend_id != y->backend_id) return x->backend_id < y->backend_id ? -1 : 1;
    return strcmp(x->name, y->name);
}

void ggprof_op_stats_sort(ggprof_op_stats *s) {
    ggprof_sort(s->v, s->n, sizeof(*s->v), cmp_total);
}

void ggprof_op_stats_free(ggprof_op_stats *s) {
    free(s->v);
    memset(s, 0, sizeof(*s));
}

void ggprof_fmt_ne(char *buf, size_t len, const int64_t ne[4]) {
    if (ne[0] == 0 && ne[1] == 0 && ne[2] == 0 && ne[3] == 0) {
        buf[0] = '\0';
        return;
    }
    int nd = 4;
    while (nd > 1 && ne[nd - 1] <= 1) nd--;
    size_t p = (size_t) snprintf(buf, len, "[");
    for (int i = 0; i < nd && p < len; i++) p += (size_t) snprintf(buf + p, len - p, "%s%" PRId64, i ? ", " : "", ne[i]);
    if (p < len) snprintf(buf + p, len - p, "]");
}

void ggprof_fmt_bandwidth(char *buf, size_t len, uint64_t bytes, uint64_t ns) {
    if (!bytes || !ns) {
        buf[0] = '\0';
        return;
    }
    double gbps = (double) bytes / (double) ns;
    if (gbps >= 1000.0) {
        snprintf(buf, len, "%.2f TB/s", gbps / 1000.0);
    } else {
        snprintf(buf, len, "%.2f GB/s", gbps);
    }
}

static const char *const k_type3[] = { "OP  ", "COPY", "SYNC" };

/* "traffic 6.80 GB/s" for bytes read and written in ns; "" when unknown (bytes < 0) or either is 0. */
static void fmt_traffic(char *buf, size_t len, double bytes, uint64_t ns) {
    buf[0] = '\0';
    if (!(bytes > 0) || !ns) return;
    double gbps = bytes / (double) ns;
    snprintf(buf, len, gbps >= 1000.0 ? "traffic %.2f TB/s" : "traffic %.2f GB/s", gbps >= 1000.0 ? gbps / 1000.0 : gbps);
}

static void print_summary(FILE *fp, const ggprof_op_stats *s, int traffic) {
    fprintf(fp, "\n=== Profiling Summary ===\n");
    for (size_t i = 0; i < s->n; i++) {
        const ggprof_op_stat *o = &s->v[i];
        double pct = s->grand_total_ns ? 100.0 * (double) o->total_ns / (double) s->grand_total_ns : 0.0;
        char safe[256];
        fprintf(fp, "  [%s] backend %d %-28s %7.1f%%  count=%-6" PRId64 "  total=%8.2f ms  avg=%8.2f us  min=%8.2f us  max=%8.2f us",
               k_type3[o->type < 3 ? o->type : 0], o->backend_id, ggprof_text_safe(o->name, safe, sizeof(safe)), pct, o->count, (double) o->total_ns / 1e6,
               (double) o->total_ns / (double) o->count / 1e3, (double) o->min_ns / 1e3, (double) o->max_ns / 1e3);
        char bw[32];
        const int64_t *ne = o->rep_ne_src[0];
        int shape = ne[0] > 0 || ne[1] > 0;
        if (traffic) {
            fmt_traffic(bw, sizeof(bw), o->traffic, o->total_ns);
            if (bw[0] || shape) fprintf(fp, "  %19s", bw); /* the shapes stay in one column */
        } else {
            ggprof_fmt_bandwidth(bw, sizeof(bw), o->bytes, o->total_ns);
            if (bw[0]) fprintf(fp, "  %9s", bw);
        }
        if (shape) {
            fprintf(fp, "  [%" PRId64 " x %" PRId64, ne[0], ne[1]);
            if (ne[2] > 1) fprintf(fp, " x %" PRId64, ne[2]);
            if (ne[3] > 1) fprintf(fp, " x %" PRId64, ne[3]);
            fprintf(fp, "]");
        }
        fprintf(fp, "\n");
    }
    fprintf(fp, "  ---\n  Total: %.2f ms  (%" PRId64 " records, %zu unique ops)\n\n", (double) s->grand_total_ns / 1e6,
           s->n_records, s->n);
}

static void print_backends(FILE *fp, const ggprof_op_stats *s, int traffic) {
    fprintf(fp, "=== Per-Backend Summary ===\n");
    int seen[64] = { 0 };
    for (size_t i = 0; i < s->n; i++) {
        int b = s->v[i].backend_id;
        if (b < -1 || b >= 63 || seen[b + 1]) continue;
        seen[b + 1] = 1;
        uint64_t ns[3] = { 0 }, bytes[3] = { 0 };
        int64_t  count[3] = { 0 };
        double   rw[3] = { 0 };
        for (size_t j = 0; j < s->n; j++) {
            const ggprof_op_stat *o = &s->v[j];
            if (o->backend_id != b || o->type > 2) continue;
            ns[o->type] += o->total_ns;
            bytes[o->type] += o->bytes;
            count[o->type] += o->count;
            rw[o->type] = rw[o->type] < 0 || o->traffic < 0 ? -1 : rw[o->type] + o->traffic;
        }
        uint64_t total = ns[0] + ns[1] + ns[2];
        char safe[256];
        fprintf(fp, "  Backend %d (%s): %.2f ms (%.1f%%)\n", b, b < 0 ? "none" : ggprof_text_safe(s->v[i].backend, safe, sizeof(safe)),
                (double) total / 1e6,
               s->grand_total_ns ? 100.0 * (double) total / (double) s->grand_total_ns : 0.0);
        static const char *const label[3] = { "OPs:  ", "COPYs:", "SYNCs:" };
        for (int t = 0; t < 3; t++) {
            if (!count[t]) continue;
            char bw[32];
            if (traffic) fmt_traffic(bw, sizeof(bw), rw[t], ns[t]);
            else ggprof_fmt_bandwidth(bw, sizeof(bw), bytes[t], ns[t]);
            fprintf(fp, "    %s %" PRId64 " calls, %.2f ms%s%s\n", label[t], count[t], (double) ns[t] / 1e6, bw[0] ? ", " : "",
                   bw);
        }
    }
    fprintf(fp, "\n");
}

void ggprof_print_summary(FILE *fp, const ggprof_op_stats *s) { print_summary(fp, s, 0); }
void ggprof_print_backends(FILE *fp, const ggprof_op_stats *s) { print_backends(fp, s, 0); }

void ggprof_print_report_summary(FILE *fp, const ggprof_op_stats *s) {
    print_summary(fp, s, 1);
    print_backends(fp, s, 1);
}

void ggprof_write_text_report(FILE *fp, const ggprof_op_stats *s) {
    if (s->n_records == 0) {
        fprintf(fp, "No profiling data available.\n");
        return;
    }
    fprintf(fp, "=== Profiling Summary ===\n");
    fprintf(fp, "Total time:    %.2f ms\n", (double) s->grand_total_ns / 1e6);
    fprintf(fp, "Total records: %" PRId64 "\n", s->n_records);
    fprintf(fp, "Unique ops:    %zu\n\n", s->n);

    fprintf(fp, "=== Per-Backend Summary ===\n");
    /* Backends by total time, as the upstream profiler sorts them. */
    struct {
        int      id;
        char     name[64];
        uint64_t ns[3], bytes[3];
        int64_t  count[3];
    } b[64];
    size_t nb = 0;
    for (size_t i = 0; i < s->n; i++) {
        const ggprof_op_stat *o = &s->v[i];
        size_t j = 0;
        while (j < nb && b[j].id != o->backend_id) j++;
        if (j == nb) {
            if (nb == 64) continue;
            memset(&b[nb], 0, sizeof(b[nb]));
            b[nb].id = o->backend_id;
            snprintf(b[nb].name, sizeof(b[nb].name), "%s", o->backend);
            nb++;
        }
        int t = o->type < 3 ? o->type : 0;
        b[j].ns[t] += o->total_ns;
        b[j].bytes[t] += o->bytes;
        b[j].count[t] += o->count;
    }
    for (size_t i = 0; i < nb; i++) {
        for (size_t j = i + 1; j < nb; j++) {
            uint64_t ti = b[i].ns[0] + b[i].ns[1] + b[i].ns[2], tj = b[j].ns[0] + b[j].ns[1] + b[j].ns[2];
            if (tj > ti) {
                __typeof__(b[0]) tmp = b[i];
                b[i] = b[j];
                b[j] = tmp;
            }
        }
    }
    static const char *const label[3] = { "OPs:  ", "COPYs:", "SYNCs:" };
    for (size_t i = 0; i < nb; i++) {
        uint64_t total = b[i].ns[0] + b[i].ns[1] + b[i].ns[2];
        char safe[256];
        fprintf(fp, "  Backend %d (%s): %.2f ms (%.1f%%)\n", b[i].id, b[i].id < 0 ? "none" : ggprof_text_safe(b[i].name, safe, sizeof(safe)),
                (double) total / 1e6, s->grand_total_ns ? 100.0 * (double) total / (double) s->grand_total_ns : 0.0);
        for (int t = 0; t < 3; t++) {
            if (!b[i].count[t]) continue;
            char bw[32];
            ggprof_fmt_bandwidth(bw, sizeof(bw), b[i].bytes[t], b[i].ns[t]);
            fprintf(fp, "    %s %" PRId64 " calls, %.2f ms%s%s\n", label[t], b[i].count[t], (double) b[i].ns[t] / 1e6,
                    bw[0] ? ", " : "", bw);
        }
    }
    fprintf(fp, "\n");

    fprintf(fp, "=== Operations (sorted by total time) ===\n");
    fprintf(fp, "%-5s %4s  %-28s  %7s  %6s  %10s  %10s  %10s  %10s  %12s  %s\n", "TYPE", "BKND", "Operation", "%Time",
            "Count", "Total(ms)", "Avg(us)", "Min(us)", "Max(us)", "Bandwidth", "Tensors");
    fprintf(fp, "%-5s %4s  %-28s  %7s  %6s  %10s  %10s  %10s  %10s  %12s  %s\n", "-----", "----",
            "----------------------------", "-------", "------", "----------", "----------", "----------",
            "----------", "------------", "-------");
    static const char *const type_str[3] = { "OP", "COPY", "SYNC" };
    for (size_t i = 0; i < s->n; i++) {
        const ggprof_op_stat *o = &s->v[i];
        char bw[32], sh[3][64], tensors[256] = "", safe[256];
        ggprof_fmt_bandwidth(bw, sizeof(bw), o->bytes, o->total_ns);
        size_t p = 0;
        for (int k = 0; k < 3; k++) {
            ggprof_fmt_ne(sh[k], sizeof(sh[k]), o->rep_ne_src[k]);
            if (sh[k][0]) p += (size_t) snprintf(tensors + p, sizeof(tensors) - p, "%s%s", p ? " x " : "", sh[k]);
            if (p >= sizeof(tensors)) break;
        }
        fprintf(fp, "%-5s %4d  %-28s  %6.1f%%  %6" PRId64 "  %10.2f  %10.2f  %10.2f  %10.2f  %12s  %s\n",
                type_str[o->type < 3 ? o->type : 0], o->backend_id, ggprof_text_safe(o->name, safe, sizeof(safe)),
                s->grand_total_ns ? 100.0 * (double) o->total_ns / (double) s->grand_total_ns : 0.0, o->count,
                (double) o->total_ns / 1e6, (double) o->total_ns / (double) o->count / 1e3, (double) o->min_ns / 1e3,
                (double) o->max_ns / 1e3, bw, tensors);
    }
    fprintf(fp, "\nTotal: %.2f ms  (%" PRId64 " records, %zu unique ops)\n", (double) s->grand_total_ns / 1e6,
            s->n_records, s->n);
}

