/* The version-3 record as the seed's JSON writer lays it out: shared by the analyzer's export, the
 * collector's store (array columns) and the engine's implementation of the seed's C API. */
#ifndef GGPROF_V3_FORMAT_H
#define GGPROF_V3_FORMAT_H

#include <stddef.h>
#include <stdint.h>

/* The seed's fields; arrays are JSON text ("[1, 2, 3, 4]"), strings may be NULL (written as null). */
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
/* ggprof's keys after the seed's, and the closing brace: `, "graph_id": N|null, ... "wait_ns": N}`. */
size_t ggprof_v3_record_ggprof_keys(char *buf, size_t len, int has_graph, int64_t graph_id, int node_index, int pid,
                                    int tid, int sched_id, int timing, int64_t wait_ns);
/* A JSON string (escaped) or null. Returns the length written. */
size_t ggprof_json_string(char *buf, size_t len, const char *s);
/* A name as text for a terminal or a text report: s itself when it holds no control character, else a copy in
 * buf with each one written out ("\n", "\t", "\r", "\x1b"...), so that a name from a trace can neither break
 * a table's lines nor send escape sequences to a terminal. */
const char *ggprof_text_safe(const char *s, char *buf, size_t len);
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

/* JSON arrays as the seed writes them: "[a, b]" and "[[a, b, c, d], [...]]". */
void ggprof_json_i64s(char *buf, size_t len, const int64_t *v, int n);
void ggprof_json_i32s(char *buf, size_t len, const int32_t *v, int n);
void ggprof_json_shapes(char *buf, size_t len, const int64_t (*v)[4], int n);

#endif
