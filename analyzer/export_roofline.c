/* ggprof export --roofline: an SVG roofline plot of a trace's ops, log-log, with the backends' roofs. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sort.h"
#include "export.h"
#include "outfile.h"
#include "roofline.h"



/* The plot area inside a 960 x 640 picture. */
enum { W = 960, H = 640, L = 80, R = 760, T = 50, B = 560 };

typedef struct {
    double lx0, lx1, ly0, ly1; /* decades shown */
} axes;

static double px(const axes *a, double x) { return L + (log10(x) - a->lx0) / (a->lx1 - a->lx0) * (R - L); }
static double py(const axes *a, double y) { return B - (log10(y) - a->ly0) / (a->ly1 - a->ly0) * (B - T); }

static void xml_text(FILE *f, const char *s) {
    for (; *s; s++) {
        switch (*s) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '"': fputs("&quot;", f); break;
        case '\'': fputs("&apos;", f); break;
        default:
            if ((unsigned char) *s >= 0x20 || *s == '\t' || *s == '\n') fputc(*s, f); /* XML 1.0 forbids the rest */
        }
    }
}

static const char *const k_colors[] = { "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b" };

static int plotted(const ggprof_rl_row *r) {
    return r->flops_known && r->bytes_known && r->flops > 0 && r->bytes > 0 && r->total_ns > 0;
}

static void decade_label(char *buf, size_t len, int k) {
    if (k >= 0) {
        snprintf(buf, len, "%.0f", pow(10, k));
    } else {
        snprintf(buf, len, "%.*f", -k, pow(10, k));
    }
}

static int by_time_desc(const void *a, const void *b) {
    const ggprof_rl_row *x = a, *y = b;
    if (x->total_ns != y->total_ns) return x->total_ns < y->total_ns ? 1 : -1;
    int c = strcmp(x->label, y->label);
    return c ? c : strcmp(x->backend, y->backend);
}

static void draw_roof(FILE *f, const axes *a, const ggprof_roof *roof, double peak, const char *color, int dashed,
                      const char *what) {
    double x0 = pow(10, a->lx0), x1 = pow(10, a->lx1), y0 = pow(10, a->ly0);
    double ridge = peak / roof->gbps;
    double xs = y0 / roof->gbps > x0 ? y0 / roof->gbps : x0; /* where the bandwidth slope enters the plot */
    fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\"%s points=\"%.1f,%.1f %.1f,%.1f %.1f,%.1f\"/>\n",
            color, dashed ? " stroke-dasharray=\"6,4\"" : "", px(a, xs), py(a, xs * roof->gbps), px(a, ridge),
            py(a, peak), px(a, x1), py(a, peak));
    /* The F32 roof is labelled above its line, the F16 one below: two close peaks keep readable labels. */
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" fill=\"%s\" text-anchor=\"end\">", px(a, x1) - 4,
            py(a, peak) + (dashed ? 14 : -5), color);
    xml_text(f, roof->backend);
    fprintf(f, " %s %.2f GFLOP/s</text>\n", what, peak);
    if (!dashed) {
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" fill=\"%s\">", px(a, xs) + 6,
                py(a, xs * roof->gbps) - 8, color);
        xml_text(f, roof->backend);
        fprintf(f, " %.2f GB/s</text>\n", roof->gbps);
    }
}

/* Decades to show: every point, every roof's peak and ridge point (where memory stops bounding). */
static axes svg_axes(const ggprof_rl_row *rows, size_t n, const ggprof_roofs *roofs, size_t *n_plot_out) {
    double xmin = INFINITY, xmax = -INFINITY, ymin = INFINITY, ymax = -INFINITY;
    size_t n_plot = 0;
    for (size_t i = 0; i < n; i++) {
        if (!plotted(&rows[i])) continue;
        double x = rows[i].flops / rows[i].bytes, y = rows[i].flops / (double) rows[i].total_ns;
        xmin = fmin(xmin, x), xmax = fmax(xmax, x), ymin = fmin(ymin, y), ymax = fmax(ymax, y);
        n_plot++;
    }
    for (size_t i = 0; i < roofs->n; i++) {
        const ggprof_roof *r = &roofs->v[i];
        double peak = fmax(r->gflops, r->gflops_f16);
        xmin = fmin(xmin, fmin(r->gflops, r->gflops_f16 > 0 ? r->gflops_f16 : r->gflops) / r->gbps / 10);
        xmax = fmax(xmax, peak / r->gbps * 10);
        ymax = fmax(ymax, peak * 3); /* room above the roof for its labels */
        ymin = fmin(ymin, peak / 1000);
    }
    axes a = { -2, 2, -1, 3 };
    if (isfinite(xmin)) {
        a.lx0 = floor(log10(xmin)), a.lx1 = ceil(log10(xmax));
        a.ly0 = floor(log10(ymin)), a.ly1 = ceil(log10(ymax));
        if (a.lx1 <= a.lx0) a.lx1 = a.lx0 + 1;
        if (a.ly1 <= a.ly0) a.ly1 = a.ly0 + 1;
        if (a.lx0 < a.lx1 - 12) a.lx0 = a.lx1 - 12;
        if (a.ly0 < a.ly1 - 12) a.ly0 = a.ly1 - 12;
    }
    *n_plot_out = n_plot;
    return a;
}

/* The picture, titles, the grid of decades and the axes' labels. */
static void svg_frame(FILE *f, const axes *ap) {
    const axes a = *ap;
    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
               "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
               "font-family=\"sans-serif\">\n",
            W, H, W, H);
    fprintf(f, "<rect width=\"%d\" height=\"%d\" fill=\"white\"/>\n", W, H);
    fprintf(f, "<text x=\"%d\" y=\"28\" font-size=\"16\" font-weight=\"bold\">Roofline: ops by arithmetic intensity and "
               "achieved GFLOP/s</text>\n", L);
    fprintf(f, "<text x=\"%d\" y=\"44\" font-size=\"11\" fill=\"#555\">point area: total time; bytes: sources read + "
               "output written at their types' sizes (docs/analysis.md)</text>\n", L);
    /* Grid: a line per decade, lighter ones at 2..9 within it. */
    fprintf(f, "<g stroke=\"#ddd\" stroke-width=\"1\">\n");
    for (int k = (int) a.lx0; k < (int) a.lx1; k++) {
        for (int m = 2; m <= 9; m++) {
            double x = px(&a, m * pow(10, k));
            fprintf(f, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#f0f0f0\"/>\n", x, T, x, B);
        }
    }
    for (int k = (int) a.ly0; k < (int) a.ly1; k++) {
        for (int m = 2; m <= 9; m++) {
            double y = py(&a, m * pow(10, k));
            fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#f0f0f0\"/>\n", L, y, R, y);
        }
    }
    for (int k = (int) a.lx0; k <= (int) a.lx1; k++) {
        fprintf(f, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\"/>\n", px(&a, pow(10, k)), T, px(&a, pow(10, k)), B);
    }
    for (int k = (int) a.ly0; k <= (int) a.ly1; k++) {
        fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\"/>\n", L, py(&a, pow(10, k)), R, py(&a, pow(10, k)));
    }
    fprintf(f, "</g>\n<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"#333\"/>\n", L, T, R - L,
            B - T);
    char lab[32];
    for (int k = (int) a.lx0; k <= (int) a.lx1; k++) {
        decade_label(lab, sizeof(lab), k);
        fprintf(f, "<text x=\"%.1f\" y=\"%d\" font-size=\"11\" text-anchor=\"middle\">%s</text>\n", px(&a, pow(10, k)),
                B + 16, lab);
    }
    for (int k = (int) a.ly0; k <= (int) a.ly1; k++) {
        decade_label(lab, sizeof(lab), k);
        fprintf(f, "<text x=\"%d\" y=\"%.1f\" font-size=\"11\" text-anchor=\"end\">%s</text>\n", L - 6,
                py(&a, pow(10, k)) + 4, lab);
    }
    fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"12\" text-anchor=\"middle\">arithmetic intensity (FLOP/byte)</text>\n",
            (L + R) / 2, B + 36);
    fprintf(f, "<text x=\"20\" y=\"%d\" font-size=\"12\" text-anchor=\"middle\" transform=\"rotate(-90 20 %d)\">"
               "achieved GFLOP/s</text>\n", (T + B) / 2, (T + B) / 2);

}

/* Backends, in order of first appearance: a colour each, and a legend entry with the roof if known. */
static size_t svg_backends(FILE *f, const axes *ap, const ggprof_rl_row *rows, size_t n, const ggprof_roofs *roofs,
                           const char *backends[16]) {
    const axes a = *ap;
    size_t n_back = 0;
    for (size_t i = 0; i < n; i++) {
        size_t b = 0;
        while (b < n_back && strcmp(backends[b], rows[i].backend) != 0) b++;
        if (b == n_back && n_back < 16) backends[n_back++] = rows[i].backend;
    }
    for (size_t b = 0; b < n_back; b++) {
        const char *color = k_colors[b % (sizeof(k_colors) / sizeof(k_colors[0]))];
        const ggprof_roof *roof = ggprof_roofs_find(roofs, backends[b]);
        fprintf(f, "<rect x=\"%d\" y=\"%zu\" width=\"12\" height=\"12\" fill=\"%s\" fill-opacity=\"0.6\"/>\n", R + 16,
                (size_t) T + 20 * b, color);
        fprintf(f, "<text x=\"%d\" y=\"%zu\" font-size=\"12\">", R + 34, (size_t) T + 20 * b + 11);
        xml_text(f, backends[b]);
        fprintf(f, "%s</text>\n", roof ? "" : " (no roof given)");
        if (!roof) continue;
        draw_roof(f, &a, roof, roof->gflops, color, 0, "F32");
        if (roof->gflops_f16 > 0) draw_roof(f, &a, roof, roof->gflops_f16, color, 1, "F16");
    }

    return n_back;
}

/* Points, largest first so that small ones stay visible on top. */
static void svg_points(FILE *f, const axes *ap, const ggprof_rl_row *rows, size_t n, const char *const backends[16],
                       size_t n_back) {
    const axes a = *ap;
    uint64_t max_ns = 0;
    for (size_t i = 0; i < n; i++) {
        if (plotted(&rows[i]) && rows[i].total_ns > max_ns) max_ns = rows[i].total_ns;
    }
    for (size_t i = 0; i < n; i++) {
        const ggprof_rl_row *r = &rows[i];
        if (!plotted(r)) continue;
        size_t b = 0;
        while (b < n_back && strcmp(backends[b], r->backend) != 0) b++;
        const char *color = k_colors[b % (sizeof(k_colors) / sizeof(k_colors[0]))];
        double x = px(&a, r->flops / r->bytes), y = py(&a, r->flops / (double) r->total_ns);
        double rad = 3 + 25 * sqrt((double) r->total_ns / (double) max_ns);
        double gbps, gflops, ai, roof;
        ggprof_rl_row_rates(r, &gbps, &gflops, &ai, &roof);
        fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"%.1f\" fill=\"%s\" fill-opacity=\"0.45\" stroke=\"%s\">"
                   "<title>", x, y, rad, color, color);
        xml_text(f, r->label);
        fputs(" on ", f);
        xml_text(f, r->backend);
        fprintf(f, ": %lld runs, %.3f ms, %.2f GB/s, %.2f GFLOP/s, %.2f FLOP/B", (long long) r->count,
                (double) r->total_ns / 1e6, gbps, gflops, ai);
        if (!isnan(roof)) fprintf(f, ", %.1f%% of the roof", roof);
        fprintf(f, "</title></circle>\n<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\">", x + rad + 3, y + 4);
        xml_text(f, r->label);
        fputs("</text>\n", f);
    }
}

/* What a log axis cannot show: ops without FLOPs (data movement) or whose FLOPs the model does not know. */
static void svg_footer(FILE *f, const ggprof_rl_row *rows, size_t n, size_t n_plot) {
    fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"11\" fill=\"#555\">", L, H - 20);
    if (n == 0) {
        fputs("No OP records in this trace.", f);
    } else if (n_plot == n) {
        fputs("Every op is plotted.", f);
    } else {
        fputs("Not plotted (no FLOPs in the model, see top-ops for their GB/s):", f);
        size_t shown = 0;
        for (size_t i = 0; i < n; i++) {
            if (plotted(&rows[i])) continue;
            if (shown == 12) {
                fputs(" ...", f);
                break;
            }
            fputs(shown ? ", " : " ", f);
            xml_text(f, rows[i].label);
            shown++;
        }
    }
    fputs("</text>\n</svg>\n", f);
}

static void write_svg(FILE *f, const ggprof_rl_row *rows, size_t n, const ggprof_roofs *roofs) {
    size_t n_plot;
    axes   a = svg_axes(rows, n, roofs, &n_plot);
    svg_frame(f, &a);
    const char *backends[16];
    size_t n_back = svg_backends(f, &a, rows, n, roofs, backends);
    svg_points(f, &a, rows, n, backends, n_back);
    svg_footer(f, rows, n, n_plot);
}

int ggprof_export_roofline(sqlite3 *db, const char *path, const ggprof_export_opts *o, char *why, size_t why_len) {
    ggprof_rl_groups g;
    if (ggprof_rl_groups_load(db, &g, why, why_len) != 0) return -1;
    ggprof_rl_row *rows;
    size_t n;
    if (ggprof_rl_rollup(&g, &o->roofs, 0, &rows, &n) != 0) {
        ggprof_rl_groups_free(&g);
        snprintf(why, why_len, "out of memory");
        return -1;
    }
    ggprof_rl_groups_free(&g);
    ggprof_sort(rows, n, sizeof(*rows), by_time_desc);
    ggprof_outfile of; /* a new private file, renamed over path when whole (outfile.h) */
    FILE *f = ggprof_outfile_open(&of, path);
    if (!f) {
        snprintf(why, why_len, "cannot write '%s': %s", path, strerror(errno));
        free(rows);
        return -1;
    }
    write_svg(f, rows, n, &o->roofs);
    free(rows);
    if (ggprof_outfile_close(&of, f, 0) != 0) {
        snprintf(why, why_len, "cannot write '%s': %s", path, strerror(errno ? errno : EIO));
        return -1;
    }
    return 0;
}
