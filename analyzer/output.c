/* Rendering of the analyzer's tables: aligned text that fits a terminal, CSV (RFC 4180) and JSON. */
#include "output.h"

#include "v3_format.h"

#include <inttypes.h>
#include <math.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

int ggprof_format_parse(const char *name, ggprof_format *f) {
    if (strcmp(name, "table") == 0) {
        *f = GGPROF_FMT_TABLE;
    } else if (strcmp(name, "csv") == 0) {
        *f = GGPROF_FMT_CSV;
    } else if (strcmp(name, "json") == 0) {
        *f = GGPROF_FMT_JSON;
    } else {
        return -1;
    }
    return 0;
}

void ggprof_table_init(ggprof_table *t, const ggprof_col *cols, size_t n_cols) {
    memset(t, 0, sizeof(*t));
    t->cols   = cols;
    t->n_cols = n_cols;
}

static ggprof_cell *next_cell(ggprof_table *t) {
    if (t->n_cells == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 256;
        ggprof_cell *c = realloc(t->cells, cap * sizeof(*c));
        if (!c) {
            t->oom = 1;
            return NULL;
        }
        t->cells = c;
        t->cap   = cap;
    }
    ggprof_cell *c = &t->cells[t->n_cells++];
    memset(c, 0, sizeof(*c));
    return c;
}

void ggprof_table_text(ggprof_table *t, const char *s) {
    ggprof_cell *c = next_cell(t);
    if (!c || !s) return;
    c->s = strdup(s);
    if (c->s) {
        c->kind = 1;
    } else {
        t->oom = 1;
    }
}

void ggprof_table_int(ggprof_table *t, int64_t v) {
    ggprof_cell *c = next_cell(t);
    if (!c) return;
    c->kind = 2;
    c->i    = v;
}

void ggprof_table_real(ggprof_table *t, double v) {
    ggprof_cell *c = next_cell(t);
    if (!c || !isfinite(v)) return;
    c->kind = 3;
    c->d    = v;
}

void ggprof_table_null(ggprof_table *t) { next_cell(t); }

size_t ggprof_table_rows(const ggprof_table *t) { return t->n_cols ? t->n_cells / t->n_cols : 0; }

/* The cell as text, as the table and CSV show it; "" for an empty cell. */
static const char *cell_text(const ggprof_col *col, const ggprof_cell *c, char *buf, size_t len) {
    switch (c->kind) {
    case 1: return c->s;
    case 2: snprintf(buf, len, "%lld", (long long) c->i); return buf;
    case 3: snprintf(buf, len, col->fmt ? col->fmt : "%g", c->d); return buf;
    default: return "";
    }
}

static int is_numeric(const ggprof_cell *c) { return c->kind == 2 || c->kind == 3; }

/* The cell as the text table shows it: names with control characters written out (ggprof_text_safe). */
static const char *table_text(const ggprof_col *col, const ggprof_cell *c, char *buf, size_t len) {
    if (c->kind != 1) return cell_text(col, c, buf, len);
    return ggprof_text_safe(c->s, buf, len);
}

static void csv_field(FILE *out, const char *s) {
    if (!strpbrk(s, ",\"\r\n")) {
        fputs(s, out);
        return;
    }
    fputc('"', out);
    for (const char *p = s; *p; p++) {
        if (*p == '"') fputc('"', out);
        fputc(*p, out);
    }
    fputc('"', out);
}

static void write_csv(const ggprof_table *t, FILE *out) {
    char buf[64];
    if (t->coverage[0]) fprintf(out, "# coverage: %s\n", t->coverage);
    for (size_t c = 0; c < t->n_cols; c++) {
        if (c) fputc(',', out);
        csv_field(out, t->cols[c].key);
    }
    fputc('\n', out);
    for (size_t r = 0; r < ggprof_table_rows(t); r++) {
        for (size_t c = 0; c < t->n_cols; c++) {
            if (c) fputc(',', out);
            csv_field(out, cell_text(&t->cols[c], &t->cells[r * t->n_cols + c], buf, sizeof(buf)));
        }
        fputc('\n', out);
    }
}

static void write_json(const ggprof_table *t, FILE *out) {
    char buf[64];
    size_t rows = ggprof_table_rows(t);
    fputs(rows ? "[\n" : "[]\n", out);
    for (size_t r = 0; r < rows; r++) {
        fputs("  {", out);
        for (size_t c = 0; c < t->n_cols; c++) {
            const ggprof_cell *cell = &t->cells[r * t->n_cols + c];
            if (c) fputs(", ", out);
            ggprof_json_put(out, t->cols[c].key, 0);
            fputs(": ", out);
            if (cell->kind == 1) {
                ggprof_json_put(out, cell->s, 0);
            } else if (is_numeric(cell)) {
                fputs(cell_text(&t->cols[c], cell, buf, sizeof(buf)), out);
            } else {
                fputs("null", out);
            }
        }
        if (t->coverage[0]) {
            fputs(", ", out);
            ggprof_json_put(out, "coverage", 0);
            fputs(": ", out);
            ggprof_json_put(out, t->coverage, 0);
        }
        fputs(r + 1 < rows ? "},\n" : "}\n", out);
    }
    if (rows) fputs("]\n", out);
}

static int write_table(const ggprof_table *t, FILE *out, int width) {
    size_t n = t->n_cols, rows = ggprof_table_rows(t);
    size_t *w = calloc(n ? n : 1, sizeof(*w));
    int *numeric = calloc(n ? n : 1, sizeof(*numeric));
    if (!w || !numeric) {
        free(w);
        free(numeric);
        return -1;
    }
    char buf[512];
    size_t total = 0, shown = 0;
    for (size_t c = 0; c < n; c++) {
        if (t->cols[c].flags & GGPROF_COL_NO_TABLE) continue;
        numeric[c] = t->cols[c].fmt != NULL; /* a column of reals aligns right even when every cell is empty */
        w[c] = strlen(t->cols[c].header);
        for (size_t r = 0; r < rows; r++) {
            const ggprof_cell *cell = &t->cells[r * n + c];
            size_t l = strlen(cell->kind ? table_text(&t->cols[c], cell, buf, sizeof(buf)) : "-");
            if (l > w[c]) w[c] = l;
            if (is_numeric(cell)) numeric[c] = 1;
        }
        total += w[c];
        shown++;
    }
    /* Two spaces between columns when they fit, else one; then flexible columns give up what is still too wide. */
    size_t gap = shown && total + 2 * (shown - 1) <= (size_t) width ? 2 : 1;
    total += shown ? gap * (shown - 1) : 0;
    /* The rightmost flexible column gives first: it is the long free text (a shape, a tensor name), while a
     * leftmost one (an op name) identifies the row. */
    for (size_t c = n; c-- > 0 && total > (size_t) width;) {
        if (!(t->cols[c].flags & GGPROF_COL_FLEX) || (t->cols[c].flags & GGPROF_COL_NO_TABLE)) continue;
        size_t min  = strlen(t->cols[c].header) > 8 ? strlen(t->cols[c].header) : 8;
        size_t give = w[c] > min ? w[c] - min : 0;
        if (give > total - (size_t) width) give = total - (size_t) width;
        w[c] -= give;
        total -= give;
    }
    for (size_t r = 0; r <= rows; r++) {
        char line[1024];
        size_t p = 0, first = 1;
        for (size_t c = 0; c < n; c++) {
            if (t->cols[c].flags & GGPROF_COL_NO_TABLE) continue;
            const char *s = r == 0 ? t->cols[c].header : NULL;
            if (r > 0) {
                const ggprof_cell *cell = &t->cells[(r - 1) * n + c];
                s = cell->kind ? table_text(&t->cols[c], cell, buf, sizeof(buf)) : "-";
            }
            char cut[256];
            size_t l = strlen(s);
            if (l > w[c] && w[c] < sizeof(cut)) {
                memcpy(cut, s, w[c] - 1);
                cut[w[c] - 1] = '~';
                cut[w[c]]     = '\0';
                s             = cut;
            }
            if (!first) p += (size_t) snprintf(line + p, p < sizeof(line) ? sizeof(line) - p : 0, "%*s", (int) gap, "");
            first = 0;
            int right = numeric[c];
            if (p < sizeof(line)) p += (size_t) snprintf(line + p, sizeof(line) - p, right ? "%*s" : "%-*s", (int) w[c], s);
        }
        if (p >= sizeof(line)) p = sizeof(line) - 1;
        while (p > 0 && line[p - 1] == ' ') p--; /* no trailing blanks: goldens and terminals stay clean */
        line[p] = '\0';
        fprintf(out, "%s\n", line);
    }
    free(w);
    free(numeric);
    if (t->coverage[0]) fprintf(out, "%s\n", t->coverage);
    return 0;
}

int ggprof_table_write(const ggprof_table *t, ggprof_format f, FILE *out, int width) {
    if (t->oom) return -1;
    int rc = 0;
    switch (f) {
    case GGPROF_FMT_TABLE: rc = write_table(t, out, width); break;
    case GGPROF_FMT_CSV: write_csv(t, out); break;
    case GGPROF_FMT_JSON: write_json(t, out); break;
    }
    return rc == 0 && !ferror(out) ? 0 : -1;
}

void ggprof_table_free(ggprof_table *t) {
    for (size_t i = 0; i < t->n_cells; i++) free(t->cells[i].s);
    free(t->cells);
    memset(t, 0, sizeof(*t));
}

/* One integer from a query, or dflt when the query fails (a table an older trace lacks) or returns no row. */
static int64_t query_int(sqlite3 *db, const char *sql, int64_t dflt, int *ok) {
    sqlite3_stmt *st = NULL;
    int64_t v = dflt;
    int good = sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK;
    if (good && sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL) v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    if (ok) *ok = good;
    return v;
}

int ggprof_coverage_line(sqlite3 *db, char *buf, size_t len) {
    buf[0] = '\0';
    int has_losses = 0;
    int64_t lost = query_int(db, "SELECT COALESCE(sum(records), 0) FROM losses", 0, &has_losses);
    if (!has_losses) { /* a trace from before the losses table: its meta counted dropped messages */
        int64_t msgs = query_int(db, "SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'dropped_records'", 0, NULL);
        if (msgs <= 0) return 0;
        snprintf(buf, len, "records lost: unknown (the ring dropped %" PRId64 " messages; this trace does not say which "
                 "graphs lost records); see --ring-kib", msgs);
        return 1;
    }
    if (lost <= 0) return 0;
    int64_t graphs = query_int(db, "SELECT count(*) FROM graphs", 0, NULL);
    int64_t hit    = query_int(db, "SELECT count(*) FROM (SELECT pid, graph_id FROM losses WHERE graph_id IS NOT NULL"
                                   " INTERSECT SELECT pid, graph_id FROM graphs)", 0, NULL);
    int64_t anon   = query_int(db, "SELECT COALESCE(sum(records), 0) FROM losses WHERE graph_id IS NULL", 0, NULL);
    int64_t whole  = graphs - hit;
    int n = snprintf(buf, len, "op records for %" PRId64 " of %" PRId64 " graphs (%.1f%%): %" PRId64 " graph%s lost records"
                     " to a full ring (%" PRId64 " records lost", whole, graphs,
                     graphs ? 100.0 * (double) whole / (double) graphs : 0.0, hit, hit == 1 ? "" : "s", lost);
    if (anon > 0 && n >= 0 && (size_t) n < len) {
        n += snprintf(buf + n, len - (size_t) n, ", %" PRId64 " of them in graphs not named", anon);
    }
    if (n >= 0 && (size_t) n < len) snprintf(buf + n, len - (size_t) n, "); see --ring-kib");
    return 1;
}

void ggprof_table_coverage(ggprof_table *t, sqlite3 *db) { ggprof_coverage_line(db, t->coverage, sizeof(t->coverage)); }
