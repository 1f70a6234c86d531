/* Version-3 JSON, read: a streaming reader (a fast path for the writers' layout, cJSON for anything else) and
 * what reads into: the trace database (import) and the per-op statistics of `report` (no database). */
#include "json_v3.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#include "progress.h"
#include "store.h"
#include "hash.h"

/* ---------------------------------------------------------------- import */

/* A byte reader over gzip or plain input (gzread passes plain files through) that knows its offset. */
typedef struct {
    gzFile        f;
    unsigned char buf[1 << 16];
    int           len, pos;
    uint64_t      base; /* offset of buf[0] in the uncompressed stream */
    int           gz_error;
} reader;

static int rd_peek(reader *r) {
    if (r->pos == r->len) {
        if (r->gz_error) return -1;
        r->base += (uint64_t) r->len;
        r->len = gzread(r->f, r->buf, sizeof(r->buf));
        r->pos = 0;
        if (r->len < 0) {
            r->len      = 0;
            r->gz_error = 1;
        }
        if (r->len == 0) return -1;
    }
    return r->buf[r->pos];
}

static int rd_get(reader *r) {
    int c = rd_peek(r);
    if (c >= 0) r->pos++;
    return c;
}

static uint64_t rd_offset(const reader *r) { return r->base + (uint64_t) r->pos; }

static int rd_skip_ws(reader *r) {
    int c;
    while ((c = rd_peek(r)) == ' ' || c == '\n' || c == '\r' || c == '\t') r->pos++;
    return c;
}

/* The longest value (a record, a backend, a key's value) ggprof reads from a JSON profile: docs/analysis.md. */
#define GGPROF_JSON_MAX_VALUE (16u << 20)

typedef struct {
    char  *p;
    size_t n, cap;
} dynbuf;

static int db_push(dynbuf *b, char c) {
    if (b->n + 2 > b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 4096;
        char  *p   = realloc(b->p, cap);
        if (!p) return -1;
        b->p   = p;
        b->cap = cap;
    }
    b->p[b->n++] = c;
    b->p[b->n]   = '\0';
    return 0;
}

static int db_append(dynbuf *b, const unsigned char *p, size_t n) {
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (b->n + n + 1 > cap) cap *= 2;
        char *q = realloc(b->p, cap);
        if (!q) return -1;
        b->p   = q;
        b->cap = cap;
    }
    memcpy(b->p + b->n, p, n);
    b->n += n;
    b->p[b->n] = '\0';
    return 0;
}

typedef struct {
    const char *path;
    reader      r;
    char       *why;
    size_t      why_len;
    int         failed;
    bool        check;     /* GGPROF_JSON_CHECK=1: every record read by both readers, compared */
    int64_t     n_records; /* records read */
    int64_t     n_fast;    /* of which the fast reader took */
    ggprof_progress prog;
} import_ctx;

static void fail_at(import_ctx *x, uint64_t off, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void fail_at(import_ctx *x, uint64_t off, const char *fmt, ...) {
    if (x->failed) return;
    x->failed = 1;
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    snprintf(x->why, x->why_len, "'%s' at byte %" PRIu64 ": %s", x->path, off, msg);
}

static void fail_eof(import_ctx *x) {
    int zerr = 0;
    const char *zmsg = gzerror(x->r.f, &zerr);
    fail_at(x, rd_offset(&x->r), "truncated: the file ends inside the JSON document%s%s", zerr ? " (gzip: " : "",
            zerr ? zmsg : "");
    if (zerr) strncat(x->why, ")", x->why_len - strlen(x->why) - 1);
}

/* The bound on one value's text (a record, a backend, a key's value): checked before the buffer grows past it, so
 * that a small gzip file holding one huge string is refused without taking its size in memory. */
static void too_long(import_ctx *x) {
    fail_at(x, rd_offset(&x->r), "a value longer than %d MiB (ggprof's limit on one record, string or value of a JSON"
            " profile); refused", GGPROF_JSON_MAX_VALUE >> 20);
}

/* Copies one complete JSON value's text into b, tracking strings so that brackets inside them do not count. */
static int capture_value(import_ctx *x, dynbuf *b) {
    reader *r = &x->r;
    b->n = 0;
    int c = rd_skip_ws(r);
    if (c < 0) {
        fail_eof(x);
        return -1;
    }
    if (c == '{' || c == '[' || c == '"') {
        /* A run of the buffer at a time, copied whole: this is where a large file's bytes pass. Bytes that change
         * nothing (most of them: digits, names, spaces) are skipped by a table lookup. */
        static unsigned char interesting[256];
        if (!interesting['"']) {
            interesting['"'] = interesting['\\'] = 1;
            interesting['{'] = interesting['['] = interesting['}'] = interesting[']'] = 1;
        }
        int depth = 0, in_str = 0, esc = 0;
        for (;;) {
            if (rd_peek(r) < 0) {
                fail_eof(x);
                return -1;
            }
            const unsigned char *p = r->buf + r->pos, *end = r->buf + r->len, *q = p;
            int done = 0;
            while (q < end) {
                if (!esc) {
                    while (q < end && !interesting[*q]) q++;
                    if (q == end) break;
                }
                unsigned char ch = *q++;
                if (in_str) {
                    if (esc) {
                        esc = 0;
                    } else if (ch == '\\') {
                        esc = 1;
                    } else if (ch == '"') {
                        in_str = 0;
                    }
                } else if (ch == '"') {
                    in_str = 1;
                } else if (ch == '{' || ch == '[') {
                    depth++;
                } else if (ch == '}' || ch == ']') {
                    depth--;
                }
                if (depth <= 0 && !in_str) {
                    done = 1;
                    break;
                }
            }
            if (b->n + (size_t) (q - p) > GGPROF_JSON_MAX_VALUE) {
                too_long(x);
                return -1;
            }
            if (db_append(b, p, (size_t) (q - p))) return -1;
            r->pos += (int) (q - p);
            if (done) return 0;
        }
    }
    while ((c = rd_peek(r)) >= 0 && !strchr(",}] \t\r\n", c)) {
        if (b->n >= GGPROF_JSON_MAX_VALUE) {
            too_long(x);
            return -1;
        }
        if (db_push(b, (char) rd_get(r))) return -1;
    }
    if (c < 0) {
        fail_eof(x);
        return -1;
    }
    return 0;
}

static int expect(import_ctx *x, char want) {
    int c = rd_skip_ws(&x->r);
    if (c < 0) {
        fail_eof(x);
        return -1;
    }
    if (c != want) {
        fail_at(x, rd_offset(&x->r), "expected '%c', found '%c'", want, c);
        return -1;
    }
    x->r.pos++;
    return 0;
}

/* Node descriptions are deduplicated by content, as the engine does. */
typedef struct {
    uint64_t key;
    uint32_t id;
} node_slot;

typedef struct {
    ggprof_store *store;
    node_slot    *nodes;
    size_t        cap, n;
    uint32_t      next_id;
    int64_t       n_records;
} import_state;

static uint64_t hash_mem(const void *p, size_t n) {
    uint64_t h = ggprof_fnv_words(p, n);
    return h ? h : 1;
}

static uint32_t node_id_for(import_state *s, int32_t pid, ggprof_msg_node *m) {
    uint64_t key = hash_mem(m, sizeof(*m)) ^ ((uint64_t) (uint32_t) pid << 17);
    if ((s->n + 1) * 2 > s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 4096;
        node_slot *t = calloc(cap, sizeof(*t));
        if (!t) return 0;
        for (size_t i = 0; i < s->cap; i++) {
            if (!s->nodes[i].key) continue;
            size_t p = s->nodes[i].key & (cap - 1);
            while (t[p].key) p = (p + 1) & (cap - 1);
            t[p] = s->nodes[i];
        }
        free(s->nodes);
        s->nodes = t;
        s->cap   = cap;
    }
    size_t p = key & (s->cap - 1);
    while (s->nodes[p].key && s->nodes[p].key != key) p = (p + 1) & (s->cap - 1);
    if (s->nodes[p].key) return s->nodes[p].id;
    s->nodes[p].key = key;
    s->nodes[p].id  = m->node_id = ++s->next_id;
    s->n++;
    ggprof_store_msg(s->store, pid, 0, &m->h);
    return m->node_id;
}

static const char *const k_required[] = { "type",   "name",     "backend_id", "split_id", "start_ns", "duration_ns",
                                          "bytes",  "extra",    "tensor_name", "ne",      "out_type", "n_src",
                                          "ne_src", "nb_src",   "type_src",    "op_params", "sub_op" };

/* A JSON number as an integer: one out of int64's range (1e300, a file someone edited) reads as 0, not as the
 * undefined behaviour of the cast. */
static int64_t to_i64(double d) { return d >= -9.2e18 && d <= 9.2e18 ? (int64_t) d : 0; }

static int get_i64s(const cJSON *a, int64_t *out, int max) {
    int n = 0;
    const cJSON *v;
    cJSON_ArrayForEach(v, a) {
        if (n < max) out[n] = to_i64(v->valuedouble);
        n++;
    }
    return n;
}

static int64_t num(const cJSON *o, const char *key, int64_t dflt) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) ? to_i64(v->valuedouble) : dflt;
}

/* 64-bit values such as start_ns do not fit a double exactly: read their digits, after the key (a quoted word
 * followed by ':'; the same word as a string value, a tensor named "bytes", is not the key). */
static uint64_t u64_of(const char *text, const char *key) {
    char pat[40];
    int  n = snprintf(pat, sizeof(pat), "\"%s\"", key);
    for (const char *p = strstr(text, pat); p; p = strstr(p + 1, pat)) {
        const char *q = p + n;
        while (*q == ' ' || *q == '\t' || *q == '\n' || *q == '\r') q++;
        if (*q == ':') return strtoull(q + 1, NULL, 10);
    }
    return 0;
}

/* One record as read, before it is stored: the node it describes and its event. name and extra point into the
 * text or the parsed object, NULL when not a string. */
typedef struct {
    ggprof_msg_node  m;
    ggprof_msg_event e;
    int32_t          pid, tid;
    const char      *name, *extra;
} v3_rec;

static void rec_init(v3_rec *r) {
    memset(r, 0, sizeof(*r));
    r->m.h     = (ggprof_msg_hdr){ sizeof(r->m), GGPROF_MSG_NODE, 0 };
    r->m.op_id = -1; /* the version-3 JSON names ops only */
    for (int k = 0; k < GGPROF_MAX_SRC; k++) r->m.type_src[k] = -1;
    r->e.fused_index = -1;
}

/* The general reader: cJSON, any layout. Returns 0, or -1 with the error set. *o is for the caller to delete. */
static int parse_record_cjson(import_ctx *x, const char *text, uint64_t off, int64_t idx, v3_rec *r, cJSON **out) {
    cJSON *o = *out = cJSON_Parse(text);
    if (!o || !cJSON_IsObject(o)) {
        fail_at(x, off, "record %" PRId64 " is not a JSON object", idx);
        return -1;
    }
    for (size_t k = 0; k < sizeof(k_required) / sizeof(k_required[0]); k++) {
        if (!cJSON_GetObjectItemCaseSensitive(o, k_required[k])) {
            fail_at(x, off, "record %" PRId64 " has no '%s'", idx, k_required[k]);
            return -1;
        }
    }
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(o, "name");
    const cJSON *extra = cJSON_GetObjectItemCaseSensitive(o, "extra");
    const cJSON *tname = cJSON_GetObjectItemCaseSensitive(o, "tensor_name");
    int type = (int) num(o, "type", 0);
    rec_init(r);
    r->pid        = (int32_t) num(o, "pid", 0);
    r->tid        = (int32_t) num(o, "tid", 0);
    r->m.out_type = (int32_t) num(o, "out_type", -1);
    r->m.sub_op   = (int32_t) num(o, "sub_op", -1);
    r->m.n_src    = (int32_t) num(o, "n_src", 0);
    if (r->m.n_src < 0 || r->m.n_src > GGPROF_MAX_SRC) {
        fail_at(x, off, "record %" PRId64 " has n_src %d; expected 0 to %d", idx, r->m.n_src, GGPROF_MAX_SRC);
        return -1;
    }
    get_i64s(cJSON_GetObjectItemCaseSensitive(o, "ne"), r->m.ne, 4);
    const cJSON *a;
    int i = 0;
    cJSON_ArrayForEach(a, cJSON_GetObjectItemCaseSensitive(o, "ne_src")) if (i < GGPROF_MAX_SRC) get_i64s(a, r->m.ne_src[i++], 4);
    i = 0;
    cJSON_ArrayForEach(a, cJSON_GetObjectItemCaseSensitive(o, "nb_src")) if (i < GGPROF_MAX_SRC) get_i64s(a, r->m.nb_src[i++], 4);
    int64_t tmp[GGPROF_N_OP_PARAMS];
    int nt = get_i64s(cJSON_GetObjectItemCaseSensitive(o, "type_src"), tmp, GGPROF_MAX_SRC);
    for (int k = 0; k < nt && k < GGPROF_MAX_SRC; k++) r->m.type_src[k] = (int32_t) tmp[k];
    int np = get_i64s(cJSON_GetObjectItemCaseSensitive(o, "op_params"), tmp, GGPROF_N_OP_PARAMS);
    for (int k = 0; k < np && k < GGPROF_N_OP_PARAMS; k++) r->m.op_params[k] = (int32_t) tmp[k];
    r->name  = cJSON_IsString(name) ? name->valuestring : NULL;
    r->extra = cJSON_IsString(extra) ? extra->valuestring : NULL;
    if (type == 0 && r->name) snprintf(r->m.op, sizeof(r->m.op), "%s", r->name);
    if (cJSON_IsString(tname)) snprintf(r->m.tensor_name, sizeof(r->m.tensor_name), "%s", tname->valuestring);
    r->e.type        = (uint16_t) type;
    r->e.timing      = (uint16_t) num(o, "timing", 0);
    r->e.backend_id  = (int16_t) num(o, "backend_id", -1);
    r->e.sched_id    = (uint32_t) num(o, "sched_id", 1);
    const cJSON *gid = cJSON_GetObjectItemCaseSensitive(o, "graph_id");
    r->e.graph_id    = cJSON_IsNumber(gid) ? u64_of(text, "graph_id") : GGPROF_GRAPH_NONE;
    r->e.split_id    = (int32_t) num(o, "split_id", -1);
    r->e.node_index  = (int32_t) num(o, "node_index", -1);
    r->e.start_ns    = u64_of(text, "start_ns");
    r->e.duration_ns = u64_of(text, "duration_ns");
    r->e.bytes       = u64_of(text, "bytes");
    r->e.wait_ns     = u64_of(text, "wait_ns");
    return 0;
}

/* The fast reader: one pass over a record of the layout writers produce (a flat object of integers, plain
 * strings, null and arrays of integers or of integer arrays; keys in any order), giving what
 * parse_record_cjson gives. Anything else (a fraction or exponent, an integer beyond 2^53 where a double would
 * round it, an escape in a string, a nested object, a repeated or missing key, a value of an odd kind) returns 1:
 * the record is read by parse_record_cjson instead, which also words the errors. Strings are cut in place. */
typedef struct {
    char *p;
} fscan;

static inline void f_ws(fscan *s) {
    while (*s->p == ' ' || *s->p == '\t' || *s->p == '\n' || *s->p == '\r') s->p++;
}

/* A string at '"', without escapes: its bytes and length (cut only once the whole record is read, so that a
 * record handed to the general reader is intact). */
static int f_str(fscan *s, char **out, size_t *len) {
    char *q = ++s->p;
    for (;;) {
        unsigned char c = (unsigned char) *q;
        if (c == '"') break;
        if (c == '\\' || c < 0x20) return 1;
        q++;
    }
    *out = s->p;
    *len = (size_t) (q - s->p);
    s->p = q + 1;
    return 0;
}

/* An integer: -?digits, not followed by a fraction or exponent. big: its digits allow any int64/uint64 (the
 * fields read with strtoull), else |v| <= 2^53 (those the general reader takes through a double). */
static inline int f_int(fscan *s, int64_t *v, bool big) {
    char *p = s->p;
    bool neg = *p == '-';
    if (neg) p++;
    if (*p < '0' || *p > '9') return 1;
    uint64_t u = 0;
    int nd = 0;
    while (*p >= '0' && *p <= '9') {
        if (++nd > 18) return 1;
        u = u * 10 + (uint64_t) (*p++ - '0');
    }
    if (*p == '.' || *p == 'e' || *p == 'E') return 1;
    if (neg && big) return 1; /* strtoull would wrap it: leave that to the general reader */
    if (!big && u > (1ull << 53)) return 1;
    *v = neg ? -(int64_t) u : (int64_t) u;
    s->p = p;
    return 0;
}

static bool f_null(fscan *s) {
    if (strncmp(s->p, "null", 4) != 0) return false;
    s->p += 4;
    return true;
}

/* [item, item, ...] or []: each item read by fn(s, index, ctx); 1 when the list or an item is not as expected.
 * *n: the items there were. */
static inline __attribute__((always_inline)) int f_list(fscan *s, int (*fn)(fscan *, int, void *), void *ctx, int *n) {
    *n = 0;
    if (*s->p != '[') return 1;
    s->p++;
    f_ws(s);
    if (*s->p == ']') {
        s->p++;
        return 0;
    }
    for (;;) {
        f_ws(s);
        if (fn(s, (*n)++, ctx)) return 1;
        f_ws(s);
        if (*s->p == ',') {
            s->p++;
            continue;
        }
        if (*s->p != ']') return 1;
        s->p++;
        return 0;
    }
}

typedef struct {
    int64_t *out;
    int      max;
} ints_ctx;

static inline __attribute__((always_inline)) int f_int_item(fscan *s, int i, void *ctx) {
    ints_ctx *c = ctx;
    int64_t   v;
    if (f_int(s, &v, false)) return 1;
    if (i < c->max) c->out[i] = v;
    return 0;
}

/* [i, i, ...]: up to max kept, *n all of them. f_list inlined here, its item reader with it: a million records
 * have fifty integers each, and a call through a pointer for each cost a fifth of the read. */
static int f_ints(fscan *s, int64_t *out, int max, int *n) {
    ints_ctx c = { out, max };
    return f_list(s, f_int_item, &c, n);
}

static int f_row_item(fscan *s, int i, void *ctx) {
    int64_t (*out)[4] = ctx, tmp[4] = { 0 };
    int n;
    if (f_ints(s, tmp, 4, &n)) return 1;
    if (i < GGPROF_MAX_SRC) memcpy(out[i], tmp, sizeof(tmp));
    return 0;
}

/* [[i, ...], ...]: the first GGPROF_MAX_SRC rows, 4 values each. */
static int f_rows(fscan *s, int64_t out[GGPROF_MAX_SRC][4]) {
    int n;
    return f_list(s, f_row_item, out, &n);
}

enum {
    K_TYPE, K_NAME, K_BACKEND_ID, K_SPLIT_ID, K_START_NS, K_DURATION_NS, K_BYTES, K_EXTRA, K_TENSOR_NAME, K_NE,
    K_OUT_TYPE, K_N_SRC, K_NE_SRC, K_NB_SRC, K_TYPE_SRC, K_OP_PARAMS, K_SUB_OP, /* the required ones, as k_required */
    K_GRAPH_ID, K_NODE_INDEX, K_PID, K_TID, K_SCHED_ID, K_TIMING, K_WAIT_NS, K_COUNT
};
static const char *const k_keys[K_COUNT] = {
    "type", "name", "backend_id", "split_id", "start_ns", "duration_ns", "bytes", "extra", "tensor_name", "ne",
    "out_type", "n_src", "ne_src", "nb_src", "type_src", "op_params", "sub_op",
    "graph_id", "node_index", "pid", "tid", "sched_id", "timing", "wait_ns",
};

/* The key's index; writers put them in k_keys' order, so the one after the last is tried first. */
static int key_index(const char *k, size_t n, int after) {
    static size_t len[K_COUNT];
    if (!len[0]) {
        for (int i = 0; i < K_COUNT; i++) len[i] = strlen(k_keys[i]);
    }
    int next = after + 1 < K_COUNT ? after + 1 : 0;
    if (len[next] == n && memcmp(k, k_keys[next], n) == 0) return next;
    for (int i = 0; i < K_COUNT; i++) {
        if (len[i] == n && memcmp(k, k_keys[i], n) == 0) return i;
    }
    return -1;
}

static int parse_record_fast(char *text, v3_rec *r) {
    fscan s = { text };
    rec_init(r);
    int64_t iv[K_COUNT] = { 0 };
    bool    null_v[K_COUNT] = { 0 };
    char   *str_at[3] = { NULL, NULL, NULL }; /* name, extra, tensor_name */
    size_t  str_len[3] = { 0, 0, 0 };
    uint32_t seen = 0;
    int type = 0, last_key = -1;
    f_ws(&s);
    if (*s.p != '{') return 1;
    s.p++;
    f_ws(&s);
    if (*s.p == '}') return 1; /* no keys: the general reader says which is missing */
    for (;;) {
        char  *key;
        size_t key_len;
        f_ws(&s);
        if (*s.p != '"' || f_str(&s, &key, &key_len) || key_len == 0) return 1;
        f_ws(&s);
        if (*s.p != ':') return 1;
        s.p++;
        f_ws(&s);
        int k = key_index(key, key_len, last_key);
        last_key = k;
        if (k >= 0) {
            if (seen & (1u << k)) return 1; /* a repeated key: the general reader takes the first */
            seen |= 1u << k;
        }
        int n;
        switch (k) {
        case K_NAME: case K_EXTRA: case K_TENSOR_NAME: {
            int j = k == K_NAME ? 0 : k == K_EXTRA ? 1 : 2;
            if (*s.p == '"') {
                if (f_str(&s, &str_at[j], &str_len[j])) return 1;
            } else if (!f_null(&s)) {
                return 1;
            }
            break;
        }
        case K_NE:
            if (f_ints(&s, r->m.ne, 4, &n)) return 1;
            break;
        case K_NE_SRC:
            if (f_rows(&s, r->m.ne_src)) return 1;
            break;
        case K_NB_SRC:
            if (f_rows(&s, r->m.nb_src)) return 1;
            break;
        case K_TYPE_SRC: {
            int64_t t[GGPROF_MAX_SRC];
            if (f_ints(&s, t, GGPROF_MAX_SRC, &n)) return 1;
            for (int i = 0; i < n && i < GGPROF_MAX_SRC; i++) r->m.type_src[i] = (int32_t) t[i];
            break;
        }
        case K_OP_PARAMS: {
            int64_t t[GGPROF_N_OP_PARAMS];
            if (f_ints(&s, t, GGPROF_N_OP_PARAMS, &n)) return 1;
            for (int i = 0; i < n && i < GGPROF_N_OP_PARAMS; i++) r->m.op_params[i] = (int32_t) t[i];
            break;
        }
        case -1: /* a key of someone else's: a plain value is skipped, anything else goes to the general reader */
            if (*s.p == '"') {
                char  *skip;
                size_t skip_len;
                if (f_str(&s, &skip, &skip_len)) return 1;
            } else if (!f_null(&s)) {
                int64_t v;
                if (f_int(&s, &v, true)) return 1;
            }
            break;
        default: { /* the integers */
            bool big = k == K_START_NS || k == K_DURATION_NS || k == K_BYTES || k == K_WAIT_NS || k == K_GRAPH_ID;
            if (f_null(&s)) {
                null_v[k] = true;
            } else if (f_int(&s, &iv[k], big)) {
                return 1;
            }
        }
        }
        f_ws(&s);
        if (*s.p == ',') {
            s.p++;
            continue;
        }
        if (*s.p != '}') return 1;
        s.p++;
        break;
    }
    f_ws(&s);
    if (*s.p != '\0') return 1;
    if ((seen & ((1u << (K_SUB_OP + 1)) - 1)) != (1u << (K_SUB_OP + 1)) - 1) return 1;
    int64_t n_src = (seen & (1u << K_N_SRC)) && !null_v[K_N_SRC] ? iv[K_N_SRC] : 0;
    if (n_src < 0 || n_src > GGPROF_MAX_SRC) return 1; /* the general reader words the error */
    for (int j = 0; j < 3; j++) if (str_at[j]) str_at[j][str_len[j]] = '\0'; /* read whole: cut the strings */
    r->name  = str_at[0];
    r->extra = str_at[1];
    char *tname = str_at[2];
#define NUM(k, dflt) ((seen & (1u << (k))) && !null_v[k] ? iv[k] : (int64_t) (dflt))
    type          = (int) NUM(K_TYPE, 0);
    r->pid        = (int32_t) NUM(K_PID, 0);
    r->tid        = (int32_t) NUM(K_TID, 0);
    r->m.out_type = (int32_t) NUM(K_OUT_TYPE, -1);
    r->m.sub_op   = (int32_t) NUM(K_SUB_OP, -1);
    r->m.n_src    = (int32_t) n_src;
    if (type == 0 && r->name) snprintf(r->m.op, sizeof(r->m.op), "%s", r->name);
    if (tname) snprintf(r->m.tensor_name, sizeof(r->m.tensor_name), "%s", tname);
    r->e.type        = (uint16_t) type;
    r->e.timing      = (uint16_t) NUM(K_TIMING, 0);
    r->e.backend_id  = (int16_t) NUM(K_BACKEND_ID, -1);
    r->e.sched_id    = (uint32_t) NUM(K_SCHED_ID, 1);
    r->e.graph_id    = (seen & (1u << K_GRAPH_ID)) && !null_v[K_GRAPH_ID] ? (uint64_t) iv[K_GRAPH_ID] : GGPROF_GRAPH_NONE;
    r->e.split_id    = (int32_t) NUM(K_SPLIT_ID, -1);
    r->e.node_index  = (int32_t) NUM(K_NODE_INDEX, -1);
    r->e.start_ns    = (uint64_t) NUM(K_START_NS, 0);
    r->e.duration_ns = (uint64_t) NUM(K_DURATION_NS, 0);
    r->e.bytes       = (uint64_t) NUM(K_BYTES, 0);
    r->e.wait_ns     = (uint64_t) NUM(K_WAIT_NS, 0);
#undef NUM
    return 0;
}

/* The two readers agree (GGPROF_JSON_CHECK=1 reads every record with both: tests/e2e/json_readers.sh). */
static bool rec_same(const v3_rec *a, const v3_rec *b) {
    return memcmp(&a->m, &b->m, sizeof(a->m)) == 0 && memcmp(&a->e, &b->e, sizeof(a->e)) == 0 && a->pid == b->pid &&
           a->tid == b->tid && (a->name && b->name ? strcmp(a->name, b->name) == 0 : a->name == b->name) &&
           (a->extra && b->extra ? strcmp(a->extra, b->extra) == 0 : a->extra == b->extra);
}

/* What becomes of each record and backend entry read: stored (import), or counted (the op statistics). */
typedef struct {
    char name[GGPROF_MAX_NAME], device[GGPROF_MAX_NAME];
    int32_t pid, id, device_type;
    uint32_t sched_id;
} v3_backend;

typedef struct {
    void (*record)(void *user, v3_rec *r);
    void (*backend)(void *user, const v3_backend *b);
    void *user;
} v3_sink;

static int read_record(import_ctx *x, const v3_sink *sink, char *text, uint64_t off) {
    int64_t idx = x->n_records++;
    v3_rec  r;
    cJSON  *o = NULL;
    if (x->check) {
        /* Both readers: the general one on a copy, as the fast one cuts its strings in place. */
        char *copy = strdup(text);
        v3_rec slow;
        if (!copy || parse_record_cjson(x, copy, off, idx, &slow, &o) != 0) {
            free(copy);
            cJSON_Delete(o);
            return -1;
        }
        if (parse_record_fast(text, &r) == 0) {
            x->n_fast++;
            if (!rec_same(&r, &slow)) {
                fail_at(x, off, "record %" PRId64 ": the fast and the general JSON readers differ", idx);
                free(copy);
                cJSON_Delete(o);
                return -1;
            }
        }
        r = slow;
        free(copy); /* slow's strings are in o */
    } else if (parse_record_fast(text, &r) == 0) {
        x->n_fast++;
    } else if (parse_record_cjson(x, text, off, idx, &r, &o) != 0) {
        cJSON_Delete(o);
        return -1;
    }
    sink->record(sink->user, &r);
    cJSON_Delete(o);
    return 0;
}

static void store_record(void *user, v3_rec *r) {
    import_state *s = user;
    r->e.node_id = node_id_for(s, r->pid, &r->m);
    ggprof_store_event(s->store, r->pid, r->tid, &r->e, r->name ? r->name : "unknown", r->extra);
    if (++s->n_records % 100000 == 0) ggprof_store_commit(s->store);
}

static int read_backend(import_ctx *x, const v3_sink *sink, const char *text, uint64_t off) {
    cJSON *o = cJSON_Parse(text);
    if (!o || !cJSON_IsObject(o)) {
        fail_at(x, off, "a backend entry is not a JSON object");
        cJSON_Delete(o);
        return -1;
    }
    v3_backend b;
    b.pid         = (int32_t) num(o, "pid", 0);
    b.sched_id    = (uint32_t) num(o, "sched_id", 1);
    b.id          = (int32_t) num(o, "id", 0);
    b.device_type = (int32_t) num(o, "device_type", 0);
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(o, "name");
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(o, "device");
    snprintf(b.name, sizeof(b.name), "%s", cJSON_IsString(n) ? n->valuestring : "unknown");
    snprintf(b.device, sizeof(b.device), "%s", cJSON_IsString(d) ? d->valuestring : "unknown");
    sink->backend(sink->user, &b);
    cJSON_Delete(o);
    return 0;
}

static void store_backend(void *user, const v3_backend *v) {
    import_state *s = user;
    ggprof_msg_backend b;
    memset(&b, 0, sizeof(b));
    b.h           = (ggprof_msg_hdr){ sizeof(b), GGPROF_MSG_BACKEND, 0 };
    b.sched_id    = v->sched_id;
    b.backend_id  = v->id;
    b.device_type = v->device_type;
    b.is_host     = b.device_type == 0;
    snprintf(b.name, sizeof(b.name), "%s", v->name);
    snprintf(b.device, sizeof(b.device), "%s", v->device);
    ggprof_store_msg(s->store, v->pid, 0, &b.h);
}

/* Reads the document, handing each record and backend entry to the sink. Returns 0, or -1 with x's error set. */
static int scan_v3(import_ctx *x, const v3_sink *sink) {
    dynbuf key = { 0 }, val = { 0 };
    int64_t version = -1;
    struct stat fst;
    char what[300];
    snprintf(what, sizeof(what), "reading '%s'", x->path);
    ggprof_progress_start(&x->prog, what, stat(x->path, &fst) == 0 ? (uint64_t) fst.st_size : 0);
    if (expect(x, '{') != 0) goto out;
    for (;;) {
        int c = rd_skip_ws(&x->r);
        if (c == '}') {
            x->r.pos++;
            break;
        }
        if (capture_value(x, &key) != 0) goto out;
        if (key.n < 2 || key.p[0] != '"') {
            fail_at(x, rd_offset(&x->r), "expected a key, found '%.20s'", key.p);
            goto out;
        }
        key.p[key.n - 1] = '\0';
        const char *k = key.p + 1;
        if (expect(x, ':') != 0) goto out;
        if (strcmp(k, "records") == 0 || strcmp(k, "backends") == 0) {
            int is_rec = k[0] == 'r';
            if (is_rec && version != 3) {
                fail_at(x, rd_offset(&x->r), "%s", version < 0 ? "records come before a \"version\" key" : "bad version");
                goto out;
            }
            if (expect(x, '[') != 0) goto out;
            if (rd_skip_ws(&x->r) == ']') {
                x->r.pos++;
            } else {
                for (;;) {
                    uint64_t off = rd_offset(&x->r);
                    if (rd_skip_ws(&x->r) < 0 || capture_value(x, &val) != 0) {
                        if (!x->failed) fail_eof(x);
                        goto out;
                    }
                    if ((is_rec ? read_record(x, sink, val.p, off) : read_backend(x, sink, val.p, off)) != 0) goto out;
                    if ((x->n_records & 4095) == 0) ggprof_progress_update(&x->prog, (uint64_t) gzoffset(x->r.f));
                    c = rd_skip_ws(&x->r);
                    if (c == ',') {
                        x->r.pos++;
                        continue;
                    }
                    if (c == ']') {
                        x->r.pos++;
                        break;
                    }
                    if (c < 0) {
                        fail_eof(x);
                    } else {
                        fail_at(x, rd_offset(&x->r), "expected ',' or ']' after record %" PRId64, x->n_records - 1);
                    }
                    goto out;
                }
            }
        } else {
            uint64_t off = rd_offset(&x->r);
            if (capture_value(x, &val) != 0) goto out;
            if (strcmp(k, "version") == 0) {
                version = val.p ? strtoll(val.p, NULL, 10) : -1; /* an empty value leaves no buffer */
                if (version != 3) {
                    fail_at(x, off, "JSON profile version %s; ggprof reads version 3", val.p ? val.p : "(empty)");
                    goto out;
                }
            }
        }
        c = rd_skip_ws(&x->r);
        if (c == ',') {
            x->r.pos++;
        } else if (c != '}') {
            if (c < 0) {
                fail_eof(x);
            } else {
                fail_at(x, rd_offset(&x->r), "expected ',' or '}', found '%c'", c);
            }
            goto out;
        }
    }
    if (version != 3) fail_at(x, rd_offset(&x->r), "no \"version\" key; expected a version-3 profile");
    if (!x->failed && rd_skip_ws(&x->r) >= 0) fail_at(x, rd_offset(&x->r), "data after the end of the JSON document");
    if (!x->failed && x->r.gz_error) fail_eof(x);
out:
    ggprof_progress_end(&x->prog);
    free(key.p);
    free(val.p);
    if (x->check && !x->failed) {
        fprintf(stderr, "ggprof: json check: %" PRId64 " records, %" PRId64 " read by the fast reader and the general one "
                        "alike, the rest by the general one\n", x->n_records, x->n_fast);
    }
    return x->failed ? -1 : 0;
}

/* A reader on path, or NULL with why set. */
static import_ctx *open_v3(const char *path, char *why, size_t why_len) {
    import_ctx *x = calloc(1, sizeof(*x));
    if (!x) {
        snprintf(why, why_len, "out of memory");
        return NULL;
    }
    x->path    = path;
    x->why     = why;
    x->why_len = why_len;
    x->check   = getenv("GGPROF_JSON_CHECK") && strcmp(getenv("GGPROF_JSON_CHECK"), "1") == 0;
    x->r.f     = gzopen(path, "rb");
    if (!x->r.f) {
        snprintf(why, why_len, "cannot open '%s': %s", path, strerror(errno));
        free(x);
        return NULL;
    }
    gzbuffer(x->r.f, 1 << 17);
    return x;
}

static void close_v3(import_ctx *x) {
    gzclose(x->r.f);
    free(x);
}

sqlite3 *ggprof_json_v3_import(const char *path, char *why, size_t why_len) {
    import_ctx *x = open_v3(path, why, why_len);
    if (!x) return NULL;
    import_state s = { 0 };
    if (ggprof_store_create(&s.store, "", why, why_len) != 0) {
        close_v3(x);
        return NULL;
    }
    v3_sink sink = { store_record, store_backend, &s };
    int failed = scan_v3(x, &sink);
    close_v3(x);
    free(s.nodes);
    char fwhy[256];
    sqlite3 *db = ggprof_store_finish(s.store, fwhy, sizeof(fwhy));
    if (failed || !db) {
        if (!failed) snprintf(why, why_len, "%s", fwhy);
        sqlite3_close(db);
        return NULL;
    }
    return db;
}

/* The op statistics straight from the records: what ggprof_op_stats_load computes from the database the import
 * would build (rows in file order, a group's shapes from its first record's first three sources, a backend's
 * name from its first scheduler's entry, the last entry of one repeated), without building it. */
typedef struct {
    ggprof_op_stats    *st;
    v3_backend         *be;
    size_t              n_be, cap_be;
    int                 oom;
    ggprof_json_v3_each each;
    void               *user;
} stats_state;

static void stats_record(void *user, v3_rec *r) {
    stats_state *t = user;
    int is_new = 0;
    int64_t counted = t->st->n_records;
    ggprof_op_stat *g = ggprof_op_stats_add(t->st, r->e.type, r->e.backend_id, r->name ? r->name : "unknown",
                                            r->e.duration_ns, r->e.bytes, &is_new);
    if (is_new && g) {
        int nsrc = r->m.n_src < 0 ? 0 : r->m.n_src > 3 ? 3 : r->m.n_src;
        memset(g->rep_ne_src, 0, sizeof(g->rep_ne_src));
        for (int i = 0; i < nsrc; i++) memcpy(g->rep_ne_src[i], r->m.ne_src[i], sizeof(g->rep_ne_src[i]));
    }
    /* the group the record went to, new or not (its last; none when out of memory, which counts no record) */
    if (t->each && t->st->n_records > counted) {
        t->each(t->user, &t->st->v[t->st->last], r->e.type, r->name, r->extra, &r->m);
    }
}

static void stats_backend(void *user, const v3_backend *b) {
    stats_state *t = user;
    for (size_t i = 0; i < t->n_be; i++) {
        if (t->be[i].pid == b->pid && t->be[i].sched_id == b->sched_id && t->be[i].id == b->id) {
            t->be[i] = *b;
            return;
        }
    }
    if (t->n_be == t->cap_be) {
        size_t cap = t->cap_be ? t->cap_be * 2 : 16;
        v3_backend *v = realloc(t->be, cap * sizeof(*v));
        if (!v) {
            t->oom = 1;
            return;
        }
        t->be = v;
        t->cap_be = cap;
    }
    t->be[t->n_be++] = *b;
}

int ggprof_json_v3_op_stats(const char *path, ggprof_op_stats *out, ggprof_json_v3_each each, void *user, char *why,
                            size_t why_len) {
    memset(out, 0, sizeof(*out));
    import_ctx *x = open_v3(path, why, why_len);
    if (!x) return -1;
    stats_state t = { out, NULL, 0, 0, 0, each, user };
    v3_sink sink = { stats_record, stats_backend, &t };
    int failed = scan_v3(x, &sink);
    close_v3(x);
    if (!failed && t.oom) {
        snprintf(why, why_len, "out of memory");
        failed = -1;
    }
    for (size_t i = 0; !failed && i < out->n; i++) {
        const v3_backend *first = NULL;
        for (size_t j = 0; j < t.n_be; j++) {
            const v3_backend *b = &t.be[j];
            if (b->id != out->v[i].backend_id) continue;
            if (!first || b->pid < first->pid || (b->pid == first->pid && b->sched_id < first->sched_id)) first = b;
        }
        snprintf(out->v[i].backend, sizeof(out->v[i].backend), "%s", first ? first->name : "unknown");
    }
    free(t.be);
    if (failed) {
        ggprof_op_stats_free(out);
        return -1;
    }
    ggprof_op_stats_sort(out);
    return 0;
}
