/* A table of rows and typed columns, rendered as an aligned text table, CSV or JSON: the analyzer's output. */
#ifndef GGPROF_OUTPUT_H
#define GGPROF_OUTPUT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef enum { GGPROF_FMT_TABLE, GGPROF_FMT_CSV, GGPROF_FMT_JSON } ggprof_format;

/* "table", "csv" or "json"; returns 0, or -1 for another name. */
int ggprof_format_parse(const char *name, ggprof_format *f);

#define GGPROF_COL_FLEX     1 /* text that shrinks (cut, ending in '~') when the table is wider than the terminal */
#define GGPROF_COL_NO_TABLE 2 /* in CSV and JSON only: detail that would not fit 80 columns */

typedef struct {
    const char *header; /* the text table's heading: "GB/s" */
    const char *key;    /* the CSV heading and JSON key: "gbps" */
    const char *fmt;    /* printf format of a real number ("%.2f"), in every format; NULL for other columns */
    int         flags;
} ggprof_col;

typedef struct {
    int     kind; /* 0 null, 1 text, 2 integer, 3 real */
    int64_t i;
    double  d;
    char   *s;
} ggprof_cell;

typedef struct {
    const ggprof_col *cols;
    size_t            n_cols;
    ggprof_cell      *cells; /* row-major */
    size_t            n_cells, cap;
    int               oom;
    char              coverage[320]; /* ggprof_table_coverage: "" when the trace lost nothing */
} ggprof_table;

void ggprof_table_init(ggprof_table *t, const ggprof_col *cols, size_t n_cols);
/* Each adds the next cell of the current row, rows filling left to right. A NULL text, or a real that is not
 * finite, is an empty cell: "-" in the table, empty in CSV, null in JSON. */
void ggprof_table_text(ggprof_table *t, const char *s);
void ggprof_table_int(ggprof_table *t, int64_t v);
void ggprof_table_real(ggprof_table *t, double v);
void ggprof_table_null(ggprof_table *t);
size_t ggprof_table_rows(const ggprof_table *t);
/* Writes the table in format f; width bounds the text table's lines (80 for a terminal). JSON is an array of
 * objects, one per row, every string escaped (ggprof_json_put, schema/v3_format.h). Returns 0, or -1 when out of
 * memory or out fails. */
int  ggprof_table_write(const ggprof_table *t, ggprof_format f, FILE *out, int width);
void ggprof_table_free(ggprof_table *t);

/* What share of the trace's graphs its figures cover, when the ring lost records (the losses table; a trace from
 * before it says "unknown" when its ring dropped messages): "op records for 29 of 296 graphs (9.8%): 267 graphs
 * lost records to a full ring (2112345 records); see --ring-kib". Returns 1 with the line in buf, 0 (buf "") when
 * nothing was lost. Every command that shows figures of the records says it with this line. */
typedef struct sqlite3 sqlite3;
int ggprof_coverage_line(sqlite3 *db, char *buf, size_t len);
/* Gives t the trace's coverage line: after the text table, as a first "# coverage: ..." line of CSV, as a
 * "coverage" field of each JSON object; nothing when the trace lost nothing (outputs stay as they were). */
void ggprof_table_coverage(ggprof_table *t, sqlite3 *db);

#endif
