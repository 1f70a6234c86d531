/* The seed's version-3 record layout, written once for every writer in ggprof. */
#include "v3_format.h"

#include <inttypes.h>
#include <stdio.h>

static size_t clamp(size_t p, size_t len) { return p < len ? p : len; }

size_t ggprof_json_string(char *buf, size_t len, const char *s) {
    if (!s) return clamp((size_t) snprintf(buf, len, "null"), len);
    size_t p = 0;
    if (p + 1 < len) buf[p++] = '"';
    for (const unsigned char *c = (const unsigned char *) s; *c && p + 8 < len; c++) {
        if (*c == '"' || *c == '\\') {
            buf[p++] = '\\';
            buf[p++] = (char) *c;
        } else if (*c < 0x20) {
            p += (size_t) snprintf(buf + p, len - p, "\\u%04x", *c);
        } else {
            buf[p++] = (char) *c;
        }
    }
    if (p + 1 < len) buf[p++] = '"';
    if (p < len) buf[p] = '\0';
    return p;
}

size_t ggprof_v3_record_open(char *buf, size_t len, const ggprof_v3_fields *f) {
    size_t p = clamp((size_t) snprintf(buf, len, "{\"type\": %d, \"name\": ", f->type), len);
    p += ggprof_json_string(buf + p, len - p, f->name ? f->name : "unknown");
    p = clamp(p + (size_t) snprintf(buf + p, len - p,
                                    ", \"backend_id\": %d, \"split_id\": %d, \"start_ns\": %" PRIu64
                                    ", \"duration_ns\": %" PRIu64 ", \"bytes\": %" PRIu64 ", \"extra\": ",
                                    f->backend_id, f->split_id, f->start_ns, f->duration_ns, f->bytes),
              len);
    p += ggprof_json_string(buf + p, len - p, f->extra);
    p = clamp(p + (size_t) snprintf(buf + p, len - p, ", \"tensor_name\": "), len);
    p += ggprof_json_string(buf + p, len - p, f->tensor_name);
    p = clamp(p + (size_t) snprintf(buf + p, len - p,
                                    ", \"ne\": %s, \"out_type\": %d, \"n_src\": %d, \"ne_src\": %s, \"nb_src\": %s, "
                                    "\"type_src\": %s, \"op_params\": %s, \"sub_op\": %d",
                                    f->ne, f->out_type, f->n_src, f->ne_src, f->nb_src, f->type_src, f->op_params,
                                    f->sub_op),
              len);
    return p;
}

void ggprof_json_i64s(char *buf, size_t len, const int64_t *v, int n) {
    size_t p = clamp((size_t) snprintf(buf, len, "["), len);
    for (int i = 0; i < n && p < len; i++) p += (size_t) snprintf(buf + p, len - p, "%s%" PRId64, i ? ", " : "", v[i]);
    if (p < len) snprintf(buf + p, len - p, "]");
}

void ggprof_json_i32s(char *buf, size_t len, const int32_t *v, int n) {
    int64_t w[64];
    if (n > 64) n = 64;
    for (int i = 0; i < n; i++) w[i] = v[i];
    ggprof_json_i64s(buf, len, w, n);
}

void ggprof_json_shapes(char *buf, size_t len, const int64_t (*v)[4], int n) {
    size_t p = clamp((size_t) snprintf(buf, len, "["), len);
    for (int i = 0; i < n && p < len; i++) {
        char one[128];
        ggprof_json_i64s(one, sizeof(one), v[i], 4);
        p += (size_t) snprintf(buf + p, len - p, "%s%s", i ? ", " : "", one);
    }
    if (p < len) snprintf(buf + p, len - p, "]");
}

const char *ggprof_text_safe(const char *s, char *buf, size_t len) {
    const unsigned char *p = (const unsigned char *) s;
    while (*p && *p >= 0x20 && *p != 0x7f) p++;
    if (!*p || len == 0) return s;
    size_t o = 0;
    for (p = (const unsigned char *) s; *p && o + 5 < len; p++) {
        if (*p >= 0x20 && *p != 0x7f) {
            buf[o++] = (char) *p;
        } else {
            const char *esc = *p == '\n' ? "\\n" : *p == '\t' ? "\\t" : *p == '\r' ? "\\r" : NULL;
            o += esc ? (size_t) snprintf(buf + o, len - o, "%s", esc) : (size_t) snprintf(buf + o, len - o, "\\x%02x", *p);
        }
    }
    buf[o] = '\0';
    return buf;
}
