/* The upstream profiler's text report: overall summary, per-backend summary, operations table. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "export.h"
#include "trace.h"

static void write_report(FILE *fp, const ggprof_op_stats *s) {
    if (s->n_records == 0) {
        fprintf(fp, "No profiling data available.\n");
        return;
    }
    fprintf(fp, "=== Profiling Summary ===\n");
    fprintf(fp, "Total time:    %.2f ms\n", (double) s->grand_total_ns / 1e6);
    fprintf(fp, "Total records: %" PRId64 "\n", s->n_records);
    fprintf(fp, "Unique ops:    %zu\n\n", s->n);

    fprintf(fp, "=== Per-Backend Summary ===\n");
    /* Backends by total time, as the seed sorts them. */
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
        fprintf(fp, "  Backend %d (%s): %.2f ms (%.1f%%)\n", b[i].id, b[i].id < 0 ? "none" : b[i].name,
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
        char bw[32], sh[3][64], tensors[256] = "";
        ggprof_fmt_bandwidth(bw, sizeof(bw), o->bytes, o->total_ns);
        size_t p = 0;
        for (int k = 0; k < 3; k++) {
            ggprof_fmt_ne(sh[k], sizeof(sh[k]), o->rep_ne_src[k]);
            if (sh[k][0]) p += (size_t) snprintf(tensors + p, sizeof(tensors) - p, "%s%s", p ? " x " : "", sh[k]);
            if (p >= sizeof(tensors)) break;
        }
        fprintf(fp, "%-5s %4d  %-28s  %6.1f%%  %6" PRId64 "  %10.2f  %10.2f  %10.2f  %10.2f  %12s  %s\n",
                type_str[o->type < 3 ? o->type : 0], o->backend_id, o->name,
                s->grand_total_ns ? 100.0 * (double) o->total_ns / (double) s->grand_total_ns : 0.0, o->count,
                (double) o->total_ns / 1e6, (double) o->total_ns / (double) o->count / 1e3, (double) o->min_ns / 1e3,
                (double) o->max_ns / 1e3, bw, tensors);
    }
    fprintf(fp, "\nTotal: %.2f ms  (%" PRId64 " records, %zu unique ops)\n", (double) s->grand_total_ns / 1e6,
            s->n_records, s->n);
}

int ggprof_export_text(sqlite3 *db, const char *path, char *why, size_t why_len) {
    ggprof_op_stats s;
    if (ggprof_op_stats_load(db, &s) != 0) {
        snprintf(why, why_len, "cannot read the trace: %s", sqlite3_errmsg(db));
        return -1;
    }
    FILE *fp = fopen(path, "w");
    if (!fp) {
        snprintf(why, why_len, "cannot write '%s': %s", path, strerror(errno));
        ggprof_op_stats_free(&s);
        return -1;
    }
    write_report(fp, &s);
    ggprof_op_stats_free(&s);
    int bad = ferror(fp);
    if (fclose(fp) != 0 || bad) {
        snprintf(why, why_len, "cannot write '%s': %s", path, strerror(errno ? errno : EIO));
        return -1;
    }
    return 0;
}
