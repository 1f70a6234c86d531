/* The upstream profiler's version-3 record layout, written once for every writer in ggprof. */
#include "v3_format.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static size_t clamp(size_t p, size_t len) { return p < len ? p : len; }

/* ---------------------------------------------------------------- JSON strings: the one escaper */

/* What each byte is in a JSON string: 0 written as it is (the hot loop runs over these), or one of these. */
enum { J_PLAIN, J_END, J_BACKSLASH, J_CONTROL, J_HTML, J_HIGH };
#define J8(k) k, k, k, k, k, k, k, k
static const unsigned char k_json_class[256] = {
    J_END, J_CONTROL, J_CONTROL, J_CONTROL, J_CONTROL, J_CONTROL, J_CONTROL, J_CONTROL, /* 0x00: NUL ends it */
    J8(J_CONTROL), J8(J_CONTROL), J8(J_CONTROL),                                        /* 0x08-0x1f */
    0, 0, J_BACKSLASH, 0, 0, 0, J_HTML, 0, J8(0),                                       /* 0x20: '"' '&' */
    J8(0), 0, 0, 0, 0, J_HTML, 0, J_HTML, 0,                                            /* 0x30: '<' '>' */
    J8(0), J8(0), J8(0), 0, 0, 0, 0, J_BACKSLASH, 0, 0, 0,                              /* 0x40: '\\' */
    J8(0), J8(0), J8(0), 0, 0, 0, 0, 0, 0, 0, J_CONTROL,                                /* 0x60-0x7f: DEL */
    J8(J_HIGH), J8(J_HIGH), J8(J_HIGH), J8(J_HIGH), J8(J_HIGH), J8(J_HIGH), J8(J_HIGH), J8(J_HIGH),
    J8(J_HIGH), J8(J_HIGH), J8(J_HIGH), J8(J_HIGH), J8(J_HIGH), J8(J_HIGH), J8(J_HIGH), J8(J_HIGH),
};
#undef J8
/* The control characters JSON writes in two bytes (as JSON.stringify and Python's json do), by code. */
static const char k_json_short[32] = { ['\b'] = 'b', ['\t'] = 't', ['\n'] = 'n', ['\f'] = 'f', ['\r'] = 'r' };

/* The length of the valid UTF-8 sequence at p (its first byte >= 0x80), or 0: a stray continuation byte, a lead
 * byte of an overlong form (0xc0, 0xc1, 0xe0 0x80-0x9f, 0xf0 0x80-0x8f), of a surrogate (0xed 0xa0-0xbf), of a
 * code point above U+10FFFF (0xf4 0x90-, 0xf5-0xff), or a sequence cut short (by NUL: the string's end). */
static inline size_t utf8_len(const unsigned char *p) {
    unsigned c = p[0];
    size_t   n = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
    for (size_t i = 1; i < n; i++)
        if ((p[i] & 0xc0) != 0x80) return 0;
    if ((c == 0xe0 && p[1] < 0xa0) || (c == 0xed && p[1] >= 0xa0)) return 0;
    if ((c == 0xf0 && p[1] < 0x90) || (c == 0xf4 && p[1] >= 0x90)) return 0;
    return n;
}

size_t ggprof_utf8_len(const char *p) { return utf8_len((const unsigned char *) p); }

size_t ggprof_json_escape(char *out, size_t cap, const char *s, size_t *used, unsigned flags) {
    static const char hex[] = "0123456789abcdef";
    const unsigned char *p = (const unsigned char *) s;
    size_t o = 0;
    for (;;) {
        /* The plain run, up to what out has room for: never past it, so that a long string is read once, not
         * again from each chunk's end to its own (a 10 MB name took 30 s in 1 KiB chunks). */
        const unsigned char *run = p;
        size_t room = cap - o, n = 0;
        while (n < room && k_json_class[run[n]] == J_PLAIN) n++;
        memcpy(out + o, run, n);
        o += n;
        p = run + n;
        if (n == room) break; /* out is full: what follows goes in the next call */
        unsigned c = *p, k = k_json_class[c];
        if (k == J_END) break;
        char   e[6];
        size_t m = 2;
        if (k == J_HIGH) {
            size_t u = utf8_len(p);
            if (u == 2 && c == 0xc2 && p[1] < 0xa0) { /* a C1 control: \u0080-\u009f, as DEL and C0 (\u007f) */
                if (6 > cap - o) break;
                memcpy(out + o, "\\u00", 4);
                out[o + 4] = hex[p[1] >> 4], out[o + 5] = hex[p[1] & 15];
                o += 6;
                p += 2;
                continue;
            }
            if (u) {
                if (u > cap - o) break;
                memcpy(out + o, p, u);
                o += u;
                p += u;
                continue;
            }
            memcpy(e, "\\ufffd", 6);
            m = 6;
        } else if (k == J_BACKSLASH) {
            e[0] = '\\', e[1] = (char) c;
        } else if (k == J_HTML && !(flags & GGPROF_JSON_HTML)) {
            e[0] = (char) c, m = 1;
        } else if (c < 0x20 && k_json_short[c]) {
            e[0] = '\\', e[1] = k_json_short[c];
        } else {
            memcpy(e, "\\u00", 4);
            e[4] = hex[c >> 4], e[5] = hex[c & 15], m = 6;
        }
        if (m > cap - o) break;
        memcpy(out + o, e, m);
        o += m;
        p++;
    }
    *used = (size_t) (p - (const unsigned char *) s);
    return o;
}

void ggprof_json_put(FILE *f, const char *s, unsigned flags) {
    if (!s) {
        fputs("null", f);
        return;
    }
    char buf[1024];
    putc_unlocked('"', f);
    for (;;) {
        size_t used, n = ggprof_json_escape(buf, sizeof(buf), s, &used, flags);
        fwrite_unlocked(buf, 1, n, f);
        s += used;
        if (!*s) break;
    }
    putc_unlocked('"', f);
}

size_t ggprof_json_string(char *buf, size_t len, const char *s) {
    if (!s) {
        if (len <= 4) return clamp((size_t) snprintf(buf, len, "null"), len);
        memcpy(buf, "null", 5);
        return 4;
    }
    if (len < 3) {
        if (len) buf[0] = '\0';
        return 0;
    }
    size_t used, p = 1;
    buf[0] = '"';
    p += ggprof_json_escape(buf + 1, len - 3, s, &used, 0);
    buf[p++] = '"';
    buf[p]   = '\0';
    return p;
}

/* Appending to buf[0..len): what does not fit is cut (p stops at len), as snprintf would have cut it. */
typedef struct {
    char  *buf;
    size_t len, p;
} app;

static void app_mem(app *a, const char *s, size_t n) {
    if (a->p >= a->len) return;
    if (n > a->len - a->p - 1) n = a->len - a->p - 1;
    memcpy(a->buf + a->p, s, n);
    a->p += n;
    a->buf[a->p] = '\0';
}

#define APP_LIT(a, lit) app_mem((a), (lit), sizeof(lit) - 1)

static void app_str(app *a, const char *s) { app_mem(a, s, strlen(s)); }

static void app_u64(app *a, uint64_t v) {
    char d[24];
    app_mem(a, d, ggprof_fmt_u64(d, v));
}

static void app_int(app *a, int v) {
    if (v < 0) {
        APP_LIT(a, "-");
        app_u64(a, (uint64_t) 0 - (uint64_t) (int64_t) v);
    } else {
        app_u64(a, (uint64_t) v);
    }
}

static void app_json(app *a, const char *s) {
    if (a->p < a->len) a->p += ggprof_json_string(a->buf + a->p, a->len - a->p, s);
}

size_t ggprof_v3_record_head(char *buf, size_t len, const ggprof_v3_fields *f) {
    if (!len) return 0;
    app a = { buf, len, 0 };
    buf[0] = '\0';
    APP_LIT(&a, "{\"type\": ");
    app_int(&a, f->type);
    APP_LIT(&a, ", \"name\": ");
    app_json(&a, f->name ? f->name : "unknown");
    APP_LIT(&a, ", \"backend_id\": ");
    app_int(&a, f->backend_id);
    APP_LIT(&a, ", \"split_id\": ");
    app_int(&a, f->split_id);
    APP_LIT(&a, ", \"start_ns\": ");
    app_u64(&a, f->start_ns);
    APP_LIT(&a, ", \"duration_ns\": ");
    app_u64(&a, f->duration_ns);
    APP_LIT(&a, ", \"bytes\": ");
    app_u64(&a, f->bytes);
    APP_LIT(&a, ", \"extra\": ");
    app_json(&a, f->extra);
    return a.p;
}

size_t ggprof_v3_record_node(char *buf, size_t len, const ggprof_v3_fields *f) {
    if (!len) return 0;
    app a = { buf, len, 0 };
    buf[0] = '\0';
    APP_LIT(&a, ", \"tensor_name\": ");
    app_json(&a, f->tensor_name);
    APP_LIT(&a, ", \"ne\": ");
    app_str(&a, f->ne);
    APP_LIT(&a, ", \"out_type\": ");
    app_int(&a, f->out_type);
    APP_LIT(&a, ", \"n_src\": ");
    app_int(&a, f->n_src);
    APP_LIT(&a, ", \"ne_src\": ");
    app_str(&a, f->ne_src);
    APP_LIT(&a, ", \"nb_src\": ");
    app_str(&a, f->nb_src);
    APP_LIT(&a, ", \"type_src\": ");
    app_str(&a, f->type_src);
    APP_LIT(&a, ", \"op_params\": ");
    app_str(&a, f->op_params);
    APP_LIT(&a, ", \"sub_op\": ");
    app_int(&a, f->sub_op);
    return a.p;
}

size_t ggprof_v3_record_ggprof_keys(char *buf, size_t len, int has_graph, int64_t graph_id, int node_index, int pid,
                                    int tid, int sched_id, int timing, int64_t wait_ns) {
    if (!len) return 0;
    app a = { buf, len, 0 };
    buf[0] = '\0';
    APP_LIT(&a, ", \"graph_id\": ");
    if (has_graph) {
        if (graph_id < 0) APP_LIT(&a, "-");
        app_u64(&a, graph_id < 0 ? (uint64_t) 0 - (uint64_t) graph_id : (uint64_t) graph_id);
    } else {
        APP_LIT(&a, "null");
    }
    APP_LIT(&a, ", \"node_index\": ");
    app_int(&a, node_index);
    APP_LIT(&a, ", \"pid\": ");
    app_int(&a, pid);
    APP_LIT(&a, ", \"tid\": ");
    app_int(&a, tid);
    APP_LIT(&a, ", \"sched_id\": ");
    app_int(&a, sched_id);
    APP_LIT(&a, ", \"timing\": ");
    app_int(&a, timing);
    APP_LIT(&a, ", \"wait_ns\": ");
    if (wait_ns < 0) APP_LIT(&a, "-");
    app_u64(&a, wait_ns < 0 ? (uint64_t) 0 - (uint64_t) wait_ns : (uint64_t) wait_ns);
    APP_LIT(&a, "}");
    return a.p;
}

size_t ggprof_v3_record_open(char *buf, size_t len, const ggprof_v3_fields *f) {
    size_t p = ggprof_v3_record_head(buf, len, f);
    return p < len ? p + ggprof_v3_record_node(buf + p, len - p, f) : p;
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

/* The length of the printable character at p, or 0 for a byte to write out: a C0 control or DEL, a C1 control
 * (U+0080-U+009F: a terminal reading UTF-8 may act on U+009B as on ESC [), or a byte that is not UTF-8 (a terminal
 * reading Latin-1 acts on 0x9b itself). */
static size_t text_char(const unsigned char *p) {
    if (*p >= 0x20 && *p < 0x7f) return 1;
    if (*p < 0x80) return 0;
    size_t u = utf8_len(p);
    return u == 2 && p[0] == 0xc2 && p[1] < 0xa0 ? 0 : u;
}

const char *ggprof_text_safe(const char *s, char *buf, size_t len) {
    const unsigned char *p = (const unsigned char *) s;
    size_t n;
    while (*p && (n = text_char(p)) > 0) p += n;
    if (!*p || len == 0) return s;
    size_t o = 0;
    for (p = (const unsigned char *) s; *p;) {
        char e[8];
        const char *w = (const char *) p;
        n = text_char(p);
        size_t m = n;
        if (!n) {
            const char *esc = *p == '\n' ? "\\n" : *p == '\t' ? "\\t" : *p == '\r' ? "\\r" : NULL;
            if (!esc) snprintf(e, sizeof(e), "\\x%02x", *p);
            w = esc ? esc : e;
            m = strlen(w);
            n = 1;
        }
        if (o + m >= len) break; /* cut at a character's boundary, or before an escape */
        memcpy(buf + o, w, m);
        o += m;
        p += n;
    }
    buf[o] = '\0';
    return buf;
}

void ggprof_text_write(FILE *f, const char *s, size_t n, int keep_lines) {
    const unsigned char *p = (const unsigned char *) s, *end = p + n;
    while (p < end) {
        const unsigned char *run = p;
        size_t c;
        while (p < end && (c = text_char(p)) > 0 && c <= (size_t) (end - p)) p += c;
        if (p > run) fwrite(run, 1, (size_t) (p - run), f);
        if (p == end) break;
        if (keep_lines && (*p == '\n' || *p == '\t')) putc(*p, f);
        else if (*p == '\n' || *p == '\t' || *p == '\r') fprintf(f, "\\%c", *p == '\n' ? 'n' : *p == '\t' ? 't' : 'r');
        else fprintf(f, "\\x%02x", *p);
        p++;
    }
}
