/* The version-3 record as the upstream profiler's JSON writer lays it out: shared by the analyzer's export, the
 * collector's store (array columns) and the engine's implementation of the upstream profiler's C API. */
#ifndef GGPROF_V3_FORMAT_H
#define GGPROF_V3_FORMAT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* The upstream profiler's fields; arrays are JSON text ("[1, 2, 3, 4]"), strings may be NULL (written as null). */
typedef struct {
    int         type;
    const char *name;
    int         backend_id, split_id;
    uint64_t    start_ns, duration_ns, bytes;
    const char *extra, *tensor_name;
    const char *ne;
    int         out_type, n_src;
    const char *ne_src, *nb_src, *type_src, *op_params;
    int         sub_op;
} ggprof_v3_fields;

/* Writes `{"type": ..., "sub_op": N` (no closing brace: callers may append their own keys, then "}").
 * Returns the length written, or len when it did not fit. */
size_t ggprof_v3_record_open(char *buf, size_t len, const ggprof_v3_fields *f);
/* The same in two parts: the record's own fields (`{"type": ...` to `"extra": X`), then those of its node
 * (`, "tensor_name": ...` to `"sub_op": N`), which a writer may keep per node. */
size_t ggprof_v3_record_head(char *buf, size_t len, const ggprof_v3_fields *f);
size_t ggprof_v3_record_node(char *buf, size_t len, const ggprof_v3_fields *f);
/* ggprof's keys after the upstream profiler's, and the closing brace: `, "graph_id": N|null, ... "wait_ns": N}`. */
size_t ggprof_v3_record_ggprof_keys(char *buf, size_t len, int has_graph, int64_t graph_id, int node_index, int pid,
                                    int tid, int sched_id, int timing, int64_t wait_ns);
/* JSON strings: the one escaper every JSON writer of ggprof uses (the version-3 JSON, the exports, the HTML's data,
 * every --format json). '"' and '\\' are escaped, control characters too (\n \t \r \b \f, else \u00XX, DEL and the C1
 * controls U+0080-U+009F included: a JSON output shown on a terminal sends it no control either); valid
 * UTF-8 passes through as it is, and each byte that is not part of a valid UTF-8 sequence (a stray continuation
 * byte, an overlong form, a surrogate, a code point above U+10FFFF, a sequence cut short) becomes \ufffd: a tensor
 * name is whatever bytes the program gave ggml, which cuts names at 63 bytes, through a character or not, so the
 * output is valid UTF-8 JSON whatever the input. With GGPROF_JSON_HTML, '<', '>' and '&' are escaped too
 * (\u003c, \u003e, \u0026), so that the string can sit inside an HTML <script>. */
#define GGPROF_JSON_HTML 1u
/* The escaped inside of the NUL-terminated s (no quotes, no terminator) into out[0..cap), whole escapes and whole
 * characters only: the bytes written; *used: the bytes of s consumed (s[*used] is NUL once all of it was). */
size_t ggprof_json_escape(char *out, size_t cap, const char *s, size_t *used, unsigned flags);
/* The length of the valid UTF-8 sequence at p (its first byte >= 0x80), or 0 where no valid one begins: the reading
 * of UTF-8 every text format's escaper shares (JSON above, the Prometheus exposition of record --metrics). */
size_t ggprof_utf8_len(const char *p);
/* s as a JSON string on f, or null for NULL. */
void ggprof_json_put(FILE *f, const char *s, unsigned flags);
/* s as a JSON string (without GGPROF_JSON_HTML), or null, NUL-terminated in buf: the length written. What does
 * not fit is cut at a character's boundary, and the string is still closed. */
size_t ggprof_json_string(char *buf, size_t len, const char *s);
/* A name as text for a terminal or a text report: s itself when it holds only printable characters, else a copy
 * in buf with each other byte written out ("\n", "\t", "\r", "\x1b"...): C0 controls, DEL, the two bytes of a C1
 * control (U+0080-U+009F: "\xc2\x9b") and each byte that is not UTF-8, so that a name from a trace can neither
 * break a table's lines nor send escape sequences to a terminal. What does not fit in buf is cut at a character's
 * boundary. The one escaper of every text output (tables, reports, errors, top's screen). */
const char *ggprof_text_safe(const char *s, char *buf, size_t len);
/* The n bytes at s (s[n] readable: a NUL-terminated string, or SQLite's text of a value) on f, written out as
 * ggprof_text_safe does, whatever their length and NULs among them; with keep_lines, newlines and tabs stay as they
 * are (query's values: a line break of the user's SQL is no terminal control). */
void ggprof_text_write(FILE *f, const char *s, size_t n, int keep_lines);
/* v in decimal at out (no terminator): the length. The writers of large files format numbers with it, not printf. */
static inline size_t ggprof_fmt_u64(char out[24], uint64_t v) {
    char   d[24];
    size_t n = sizeof(d);
    do {
        d[--n] = (char) ('0' + v % 10);
        v /= 10;
    } while (v);
    for (size_t i = n; i < sizeof(d); i++) out[i - n] = d[i];
    return sizeof(d) - n;
}

/* JSON arrays as the upstream profiler writes them: "[a, b]" and "[[a, b, c, d], [...]]". */
void ggprof_json_i64s(char *buf, size_t len, const int64_t *v, int n);
void ggprof_json_i32s(char *buf, size_t len, const int32_t *v, int n);
void ggprof_json_shapes(char *buf, size_t len, const int64_t (*v)[4], int n);

#endif
