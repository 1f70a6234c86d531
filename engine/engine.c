/* libggprof.so core: attaching to the ring, checking the ggml found, describing nodes once, emitting. */
#include "engine.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <link.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ring.h"
#include "self_path.h"

ggprof_engine ggprof_eng;
__thread int  ggprof_busy;

static ggprof_ring     g_ring;
static pthread_once_t  g_init_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t g_lock      = PTHREAD_MUTEX_INITIALIZER;
static pthread_key_t   g_slot_key;
static bool            g_sink_ok;
static _Atomic int     g_process_sent;
static int             g_ack_fd = -1; /* GGML_PROFILE: the collector writes a byte here once a profile is written */
static __thread ggprof_ring_slot *t_slot;
static __thread int               t_slot_tried;
static const void     *g_base_fn; /* a real function inside libggml-base, to find its library */

/* ---- notes: one line on stderr, and into the trace when there is one ---- */

static void vnote(bool to_stderr, const char *fmt, va_list ap) {
    ggprof_msg_note m;
    memset(&m, 0, sizeof(m));
    vsnprintf(m.text, sizeof(m.text), fmt, ap);
    if (to_stderr) fprintf(stderr, "ggprof: %s\n", m.text);
    if (g_ring.file) {
        m.h = (ggprof_msg_hdr){ sizeof(m), GGPROF_MSG_NOTE, 0 };
        ggprof_emit(&m.h);
    }
}

void ggprof_note(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vnote(true, fmt, ap);
    va_end(ap);
}

void ggprof_trace_note(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vnote(false, fmt, ap);
    va_end(ap);
}

/* ---- per-thread ring slots ---- */

static void slot_destructor(void *p) {
    (void) p;
    ggprof_ring_release(&g_ring, t_slot);
    t_slot = NULL;
}

int ggprof_emit(const ggprof_msg_hdr *msg) {
    if (g_ring.file == NULL) return -1;
    if (!atomic_load_explicit(&g_ring.file->recording, memory_order_relaxed) && msg->kind >= GGPROF_MSG_GRAPH &&
        msg->kind <= GGPROF_MSG_EVENT) {
        return 0;
    }
    if (t_slot == NULL && !t_slot_tried) {
        t_slot_tried = 1;
        t_slot = ggprof_ring_claim(&g_ring, ggprof_eng.pid, (int32_t) syscall(SYS_gettid));
        if (t_slot) pthread_setspecific(g_slot_key, t_slot);
    }
    return ggprof_ring_write(&g_ring, t_slot, msg);
}

/* ---- node descriptions: sent once per distinct content, referenced by id ---- */

#define NODE_CACHE_BITS 14
#define NODE_CACHE_SIZE (1u << NODE_CACHE_BITS)
/* Lookups take no lock: an entry's id is written before its key is published. */
static struct {
    _Atomic uint64_t key;
    uint32_t         id;
} g_nodes[NODE_CACHE_SIZE];
static uint32_t g_next_node_id = 1;

/* The key of a node's description runs for every node of every split, on the thread that computes: its words
 * go through four independent multiply lanes, so the multiplies overlap instead of forming one long chain.
 * Each lane step (h ^ w) * K (K odd) is a bijection of both h and w, so two descriptions of the same length
 * that differ in any word always differ in that lane; the lanes and the length are then mixed together. */
#define KEY_MUL 0x9e3779b97f4a7c15ull
static uint64_t mix(uint64_t h, uint64_t v) { return (h ^ v) * KEY_MUL; }

static uint64_t finish(uint64_t h) {
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    return h ? h : 1;
}

#define KEY_WORDS (2 + 4 + 4 + GGML_ABI_MAX_NAME / 8 + GGML_ABI_MAX_OP_PARAMS / 8 + GGML_ABI_MAX_SRC * 9)

/* The key covers every field the description carries (the whole name buffer: bytes after its NUL only ever
 * make a second, identical description); a collision of two distinct nodes on 64 bits would merge their
 * descriptions, which is why the key is this wide. */
uint64_t ggprof_node_key(const struct ggml_tensor *t, int is_copy) {
    uint64_t w[KEY_WORDS];
    int      n = 0;
    w[n++] = (uint64_t) (uint32_t) t->type | (uint64_t) (uint32_t) t->op << 32;
    w[n++] = (uint64_t) is_copy;
    memcpy(w + n, t->ne, sizeof(t->ne));
    n += 4;
    memcpy(w + n, t->nb, sizeof(t->nb));
    n += 4;
    const struct ggml_tensor_links *l = ggprof_links(t);
    memcpy(w + n, l->name, sizeof(l->name));
    n += GGML_ABI_MAX_NAME / 8;
    if (!is_copy) {
        memcpy(w + n, t->op_params, sizeof(t->op_params));
        n += GGML_ABI_MAX_OP_PARAMS / 8;
        for (int i = 0; i < GGML_ABI_MAX_SRC; i++) {
            const struct ggml_tensor *s = l->src[i];
            if (!s) continue;
            w[n++] = (uint64_t) i << 32 | (uint32_t) s->type;
            memcpy(w + n, s->ne, sizeof(s->ne));
            memcpy(w + n + 4, s->nb, sizeof(s->nb));
            n += 8;
        }
    }
    uint64_t a = 0x243f6a8885a308d3ull, b = 0x13198a2e03707344ull, c = 0xa4093822299f31d0ull, d = 0x082efa98ec4e6c89ull;
    int i = 0;
    for (; i + 4 <= n; i += 4) {
        a = mix(a, w[i]);
        b = mix(b, w[i + 1]);
        c = mix(c, w[i + 2]);
        d = mix(d, w[i + 3]);
    }
    for (; i < n; i++) a = mix(a, w[i]);
    return finish(mix(mix(mix(mix((uint64_t) n, a), b), c), d));
}

/* Types are described as they are first seen: this ggml's ggml_type_name has no bound to enumerate up to. */
static uint8_t g_type_sent[256];

static void note_type(int32_t type) {
    if (type < 0 || type > 255 || g_type_sent[type]) return;
    const ggprof_ggml *g = &ggprof_eng.g;
    ggprof_msg_type m;
    memset(&m, 0, sizeof(m));
    m.h         = (ggprof_msg_hdr){ sizeof(m), GGPROF_MSG_TYPE, 0 };
    m.type      = type;
    m.blck_size = (int32_t) g->ggml_blck_size(type);
    m.type_size = g->ggml_type_size(type);
    snprintf(m.name, sizeof(m.name), "%s", g->ggml_type_name(type));
    if (ggprof_emit(&m.h) == 0) g_type_sent[type] = 1;
}

static void describe(ggprof_msg_node *m, const struct ggml_tensor *t, int is_copy) {
    const ggprof_ggml *g = &ggprof_eng.g;
    memset(m, 0, sizeof(*m));
    m->h = (ggprof_msg_hdr){ sizeof(*m), GGPROF_MSG_NODE, 0 };
    const struct ggml_tensor_links *l = ggprof_links(t);
    snprintf(m->tensor_name, sizeof(m->tensor_name), "%.*s", GGML_ABI_MAX_NAME, l->name);
    m->sub_op = -1;
    for (int i = 0; i < GGPROF_MAX_SRC; i++) m->type_src[i] = -1;
    if (is_copy) {
        /* The seed describes a copy by its input tensor as source 0 and no output. */
        m->out_type = -1;
        m->n_src    = 1;
        for (int d = 0; d < 4; d++) {
            m->ne_src[0][d] = t->ne[d];
            m->nb_src[0][d] = (int64_t) t->nb[d];
        }
        m->type_src[0] = t->type;
        m->nbytes      = g->ggml_nbytes(t);
        note_type(t->type);
        return;
    }
    snprintf(m->op, sizeof(m->op), "%s", g->ggml_op_name(t->op));
    m->out_type = t->type;
    memcpy(m->ne, t->ne, sizeof(m->ne));
    memcpy(m->op_params, t->op_params, sizeof(m->op_params));
    m->nbytes = g->ggml_nbytes(t);
    if (t->op == g->op.unary) {
        m->sub_op = t->op_params[0];
        snprintf(m->sub_op_name, sizeof(m->sub_op_name), "%s", g->ggml_unary_op_name(m->sub_op));
    } else if (t->op == g->op.glu) {
        m->sub_op = t->op_params[0];
        snprintf(m->sub_op_name, sizeof(m->sub_op_name), "%s", g->ggml_glu_op_name(m->sub_op));
    }
    /* n_src counts up to the last present source, as the seed's record does. */
    for (int i = 0; i < GGPROF_MAX_SRC; i++) {
        const struct ggml_tensor *s = l->src[i];
        if (!s) continue;
        m->n_src = i + 1;
        for (int d = 0; d < 4; d++) {
            m->ne_src[i][d] = s->ne[d];
            m->nb_src[i][d] = (int64_t) s->nb[d];
        }
        m->type_src[i] = s->type;
        note_type(s->type);
    }
    note_type(t->type);
}

/* Descriptions by id, kept once the seed's C API is in use: its records carry every field of the node. */
static ggprof_msg_node **g_descs;
static uint32_t          g_descs_cap;
static bool              g_keep_descs;

static void keep_description(const ggprof_msg_node *m) {
    if (m->node_id >= g_descs_cap) {
        uint32_t cap = g_descs_cap ? g_descs_cap * 2 : 1024;
        while (cap <= m->node_id) cap *= 2;
        ggprof_msg_node **d = realloc(g_descs, cap * sizeof(*d));
        if (!d) return;
        memset(d + g_descs_cap, 0, (cap - g_descs_cap) * sizeof(*d));
        g_descs     = d;
        g_descs_cap = cap;
    }
    ggprof_msg_node *copy = malloc(sizeof(*copy));
    if (!copy) return;
    *copy = *m;
    free(g_descs[m->node_id]);
    g_descs[m->node_id] = copy;
}

const ggprof_msg_node *ggprof_node_desc(uint32_t id) {
    pthread_mutex_lock(&g_lock);
    const ggprof_msg_node *d = id < g_descs_cap ? g_descs[id] : NULL;
    pthread_mutex_unlock(&g_lock);
    return d;
}

static int find_slot(uint64_t key, uint32_t *pos_out) {
    uint32_t pos = (uint32_t) (key >> (64 - NODE_CACHE_BITS));
    for (uint32_t probe = 0; probe < NODE_CACHE_SIZE; probe++, pos = (pos + 1) & (NODE_CACHE_SIZE - 1)) {
        uint64_t k = atomic_load_explicit(&g_nodes[pos].key, memory_order_acquire);
        if (k == key) {
            *pos_out = pos;
            return 1;
        }
        if (k == 0) break;
    }
    *pos_out = pos;
    return 0;
}

/* Bumped whenever the descriptions sent so far stop counting (a forked child, the C API starting to keep
 * them): ids remembered outside this file are only good for the epoch they were given in. */
static _Atomic uint32_t g_desc_epoch = 1;

uint32_t ggprof_desc_epoch(void) { return atomic_load_explicit(&g_desc_epoch, memory_order_acquire); }

static uint32_t lookup_or_send(const struct ggml_tensor *t, int is_copy, uint64_t key, bool *kept) {
    uint32_t pos;
    if (kept) *kept = false;
    if (find_slot(key, &pos)) {
        if (kept) *kept = true;
        return g_nodes[pos].id;
    }
    pthread_mutex_lock(&g_lock);
    if (find_slot(key, &pos)) { /* another thread described it meanwhile */
        pthread_mutex_unlock(&g_lock);
        if (kept) *kept = true;
        return g_nodes[pos].id;
    }
    ggprof_msg_node m;
    describe(&m, t, is_copy);
    m.node_id = g_next_node_id++;
    /* Cache only what reached the ring, so a dropped description is sent again next time. Past 3/4 full the
     * table stops growing and new descriptions are sent each time: correct, only larger. */
    bool sent = ggprof_emit(&m.h) == 0 || g_ring.file == NULL; /* no ring: nothing to send again */
    if (g_keep_descs) keep_description(&m);
    if (sent && g_next_node_id <= NODE_CACHE_SIZE * 3 / 4 &&
        atomic_load_explicit(&g_nodes[pos].key, memory_order_relaxed) == 0) {
        g_nodes[pos].id = m.node_id;
        atomic_store_explicit(&g_nodes[pos].key, key, memory_order_release);
        if (kept) *kept = true;
    }
    pthread_mutex_unlock(&g_lock);
    return m.node_id;
}

uint32_t ggprof_node_id(const struct ggml_tensor *t) { return lookup_or_send(t, 0, ggprof_node_key(t, 0), NULL); }
uint32_t ggprof_node_id_keyed(const struct ggml_tensor *t, uint64_t key, bool *kept) {
    return lookup_or_send(t, 0, key, kept);
}
uint32_t ggprof_copy_node_id(const struct ggml_tensor *t) { return lookup_or_send(t, 1, ggprof_node_key(t, 1), NULL); }

/* ---- finding ggml and checking that it is the ggml this engine understands ---- */

/* One note for every optional function missing, with what goes without them (each feature said once). */
static void note_missing(char *names, size_t names_len, char *features, size_t features_len, const char *fn,
                         const char *feature) {
    if (!feature) return;
    size_t n = strlen(names), f = strlen(features);
    snprintf(names + n, names_len - n, "%s%s", n ? ", " : "", fn);
    if (!strstr(features, feature)) snprintf(features + f, features_len - f, "%s%s", f ? ", " : "", feature);
}

/* Every function the engine needs, from the ggml the program loaded: a missing one turns off the feature it
 * serves (a note names both), or the engine when it serves them all. */
static bool load_functions(ggprof_ggml *g, void *h) {
    bool ok = true;
#define X(ret, name, args, feature)                                                                            \
    g->name = (ret(*) args) dlsym(h, #name);                                                                   \
    if (g->name == NULL && feature == GGML_NEEDED) {                                                           \
        ggprof_note("profiling off: %s not found in %s", #name, g->lib);                                       \
        ok = false;                                                                                            \
    }
    GGPROF_GGML_FUNCS(X)
#undef X
    if (!ok) return false;
    char names[512] = "", features[512] = "";
#define X(ret, name, args, feature)                                                                            \
    if (g->name == NULL) note_missing(names, sizeof(names), features, sizeof(features), #name, feature);
    GGPROF_GGML_FUNCS(X)
#undef X
    if (names[0]) ggprof_note("%s has no %s: profiling goes on without %s", g->lib, names, features);
    return true;
}

/* ggml_graph_view's result, read through our mirror, must agree with the public accessors: only then may the
 * engine compute one node at a time (serialized timing of non-CPU backends). */
static bool check_graph_view(ggprof_ggml *g, struct ggml_cgraph *gr) {
    int n = g->ggml_graph_n_nodes(gr);
    if (!g->ggml_graph_view || n < 2) return false;
    ggml_cgraph_view_buf v = g->ggml_graph_view(gr, 1, n);
    return v.g.n_nodes == n - 1 && (void *) v.g.nodes == (void *) (g->ggml_graph_nodes(gr) + 1) && v.g.size == 0;
}

/* Builds a few tensors with ggml's own constructors and reads them back through our struct mirror: a ggml
 * whose layout differs fails here, before the engine reads a single field of a real graph. */
/* Where the links of probe tensors a (named), b, add = a + b, rms = rms_norm(a) and vw = view of a at byte 4 lie:
 * right after the flags (ggml 0.23), or one pointer further (the `grad` of releases up to late 2024). */
static bool find_links(ggprof_ggml *g, const struct ggml_tensor *a, const struct ggml_tensor *b,
                       const struct ggml_tensor *add, const struct ggml_tensor *rms, const struct ggml_tensor *vw) {
    static const size_t candidates[] = { GGML_ABI_LINKS_OFFSET, GGML_ABI_LINKS_OFFSET + sizeof(void *) };
    for (size_t i = 0; i < sizeof(candidates) / sizeof(candidates[0]); i++) {
        g->links_off = candidates[i];
        if (g->ggml_tensor_overhead() < g->links_off + sizeof(struct ggml_tensor_links)) continue;
        const struct ggml_tensor_links *la = ggprof_links(a), *ladd = ggprof_links(add), *lrms = ggprof_links(rms),
                                       *lvw = ggprof_links(vw);
        if (strncmp(la->name, "ggprof_probe_a", GGML_ABI_MAX_NAME) == 0 && ladd->src[0] == a && ladd->src[1] == b &&
            lvw->view_src == a && lvw->view_offs == 4 && lrms->src[0] == a && lrms->src[1] == NULL) {
            return true;
        }
    }
    return false;
}

static bool check_abi(ggprof_ggml *g, char *why, size_t why_len) {
    if (g->ggml_tensor_overhead() < sizeof(struct ggml_tensor)) {
        snprintf(why, why_len, "ggml_tensor_overhead() %zu < %zu", g->ggml_tensor_overhead(), sizeof(struct ggml_tensor));
        return false;
    }
    struct ggml_init_params ip = { 32 * g->ggml_tensor_overhead() + (2u << 20), NULL, true }; /* room for a graph */
    struct ggml_context *ctx = g->ggml_init(ip);
    if (!ctx) {
        snprintf(why, why_len, "ggml_init failed");
        return false;
    }
    bool ok = false;
    const int32_t F16 = 1; /* ggml.h: GGML_TYPE_F16 = 1 since the first release */
    struct ggml_tensor *a = g->ggml_new_tensor_2d(ctx, GGML_ABI_TYPE_F32, 4, 5);
    struct ggml_tensor *b = g->ggml_new_tensor_2d(ctx, GGML_ABI_TYPE_F32, 4, 5);
    struct ggml_tensor *h = g->ggml_new_tensor_2d(ctx, F16, 6, 3);
    g->ggml_set_name(a, "ggprof_probe_a");
    g->ggml_set_output(b);
    if (a->type != GGML_ABI_TYPE_F32 || a->ne[0] != 4 || a->ne[1] != 5 || a->ne[2] != 1 || a->nb[0] != 4 ||
        a->nb[1] != 16 || h->type != F16 || h->nb[1] != 12 || (b->flags & GGML_ABI_FLAG_OUTPUT) == 0 ||
        g->ggml_nbytes(h) != 36) {
        snprintf(why, why_len, "struct ggml_tensor layout differs (type/ne/nb/flags)");
        goto out;
    }
    struct ggml_tensor *add = g->ggml_add(ctx, a, b);
    struct ggml_tensor *mul = g->ggml_mul(ctx, a, b);
    struct ggml_tensor *rms = g->ggml_rms_norm(ctx, a, 1e-5f);
    struct ggml_tensor *rsh = g->ggml_reshape_2d(ctx, a, 5, 4);
    struct ggml_tensor *vw  = g->ggml_view_1d(ctx, a, 3, 4);
    struct ggml_tensor *prm = g->ggml_permute(ctx, a, 1, 0, 2, 3);
    struct ggml_tensor *trn = g->ggml_transpose(ctx, a);
    struct ggml_tensor *un  = g->ggml_relu(ctx, a);
    if (!find_links(g, a, b, add, rms, vw)) {
        snprintf(why, why_len, "struct ggml_tensor layout differs (name/src/view_src at no known offset)");
        goto out;
    }
    float eps;
    memcpy(&eps, &rms->op_params[0], sizeof(eps));
    if (eps != 1e-5f) {
        snprintf(why, why_len, "struct ggml_tensor layout differs (op_params)");
        goto out;
    }
    g->op.none      = a->op;
    g->op.add       = add->op;
    g->op.mul       = mul->op;
    g->op.rms_norm  = rms->op;
    g->op.reshape   = rsh->op;
    g->op.view      = vw->op;
    g->op.permute   = prm->op;
    g->op.transpose = trn->op;
    g->op.unary     = un->op;
    g->op.glu       = -1;
    if (g->ggml_swiglu && g->ggml_glu_op_name) g->op.glu = g->ggml_swiglu(ctx, a)->op;
    struct ggml_cgraph *gr = g->ggml_new_graph(ctx);
    if (!gr) {
        snprintf(why, why_len, "ggml_new_graph failed");
        goto out;
    }
    g->ggml_build_forward_expand(gr, add);
    g->ggml_build_forward_expand(gr, rms);
    g->has_compute_flag = (add->flags & GGML_ABI_FLAG_COMPUTE) != 0;
    g->graph_view_ok    = check_graph_view(g, gr);
    if (strcmp(g->ggml_op_name(add->op), "ADD") != 0 || strcmp(g->ggml_op_name(rms->op), "RMS_NORM") != 0 ||
        strcmp(g->ggml_op_name(vw->op), "VIEW") != 0) {
        snprintf(why, why_len, "ggml_op_name disagrees with the probe graph");
        goto out;
    }
    ok = true;
out:
    g->ggml_free(ctx);
    return ok;
}

static void emit_process(void) {
    const ggprof_ggml *g = &ggprof_eng.g;
    ggprof_msg_process p;
    memset(&p, 0, sizeof(p));
    p.h        = (ggprof_msg_hdr){ sizeof(p), GGPROF_MSG_PROCESS, 0 };
    p.pid      = ggprof_eng.pid;
    p.ppid     = (int32_t) getppid();
    p.start_ns = ggprof_now_ns();
    ssize_t n  = readlink("/proc/self/exe", p.exe, sizeof(p.exe) - 1);
    if (n < 0) p.exe[0] = '\0';
    if (g->ok) { /* a process without ggml (a CUDA or OpenCL program) leaves these empty */
        snprintf(p.ggml_version, sizeof(p.ggml_version), "%s", g->ggml_version ? g->ggml_version() : "unknown");
        snprintf(p.ggml_commit, sizeof(p.ggml_commit), "%s", g->ggml_commit ? g->ggml_commit() : "");
        snprintf(p.ggml_lib, sizeof(p.ggml_lib), "%s", g->lib);
    }
    ggprof_emit(&p.h);
}

static void after_fork_child(void) {
    /* The child must never write into its parent's slot: it claims its own and describes itself anew. Under
     * GGML_PROFILE the profile is the parent's: a child's records go to the same collector, but only the
     * parent asks for the profile to be written. */
    if (g_ack_fd >= 0) {
        close(g_ack_fd);
        g_ack_fd = -1;
    }
    t_slot       = NULL;
    t_slot_tried = 0;
    ggprof_eng.pid = (int32_t) getpid();
    for (uint32_t i = 0; i < NODE_CACHE_SIZE; i++) atomic_store(&g_nodes[i].key, 0);
    atomic_fetch_add(&g_desc_epoch, 1);
    memset(g_type_sent, 0, sizeof(g_type_sent));
    pthread_mutex_init(&g_lock, NULL);
    if (g_sink_ok && g_ring.file) {
        atomic_fetch_add(&g_ring.file->n_processes, 1);
        if (atomic_load(&g_process_sent)) emit_process();
    }
}

/* The sink: where records go. Set up once per process, whether or not ggml is there (a CUDA or OpenCL
 * program without ggml still reports its kernels). */
static pthread_once_t g_sink_once = PTHREAD_ONCE_INIT;

/* ---- GGML_PROFILE without `ggprof record`: the engine starts its own collector ---- */

static _Atomic uint64_t g_unflushed;    /* graphs recorded since the profile was last written */
static uint32_t g_flush_seq;

/* ggprof beside this library (build/lib/libggprof.so -> build/bin/ggprof), unless GGPROF_BIN says where. */
static int find_ggprof(char *out, size_t len) {
    return ggprof_sibling("GGPROF_BIN", (const void *) find_ggprof, "../bin/ggprof", X_OK, out, len);
}

/* Starts `ggprof collect` detached (a double fork: the program never sees it as its child, so its own
 * wait() calls and SIGCHLD handling stay as they were). Returns 0 with the ring created and attached. */
static int start_collector(const char *profile, char *why, size_t why_len) {
    char bin[512], ring[256], parent[32], ackfd[32];
    if (find_ggprof(bin, sizeof(bin)) != 0) {
        snprintf(why, why_len, "GGML_PROFILE needs the ggprof binary ('%s'; set GGPROF_BIN)", bin);
        return -1;
    }
    const char *dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    snprintf(ring, sizeof(ring), "%s/ggprof-profile-%d-%lld.ring", dir, (int) getpid(), (long long) ggprof_now_ns());
    if (ggprof_ring_create(&g_ring, ring, 64, 4u << 20, GGPROF_LEVEL_OP) != 0) {
        snprintf(why, why_len, "cannot create the ring '%s': %s", ring, strerror(errno));
        return -1;
    }
    int pfd[2];
    if (pipe2(pfd, O_CLOEXEC) != 0) {
        snprintf(why, why_len, "pipe: %s", strerror(errno));
        return -1;
    }
    snprintf(parent, sizeof(parent), "%d", (int) getpid());
    snprintf(ackfd, sizeof(ackfd), "%d", pfd[1]);
    char *argv[] = { bin, "collect", "--ring", ring, "--parent", parent, "--ack-fd", ackfd, "--profile",
                     (char *) profile, NULL };
    /* The collector must not profile itself: no LD_PRELOAD, no GGML_PROFILE. */
    extern char **environ;
    size_t n = 0;
    while (environ[n]) n++;
    char **env = calloc(n + 1, sizeof(char *));
    if (!env) return -1;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (strncmp(environ[i], "LD_PRELOAD=", 11) != 0 && strncmp(environ[i], "GGML_PROFILE=", 13) != 0) {
            env[k++] = environ[i];
        }
    }
    pid_t mid = fork();
    if (mid == 0) {
        if (fork() == 0) {
            fcntl(pfd[1], F_SETFD, 0); /* the write end goes to the collector */
            execve(bin, argv, env);
            _exit(127);
        }
        _exit(0);
    }
    free(env);
    close(pfd[1]);
    if (mid < 0) {
        snprintf(why, why_len, "fork: %s", strerror(errno));
        close(pfd[0]);
        return -1;
    }
    waitpid(mid, NULL, 0);
    g_ack_fd = pfd[0];
    return 0;
}

/* Asks the collector to write the profile of everything recorded so far and waits until it has. */
static void profile_flush(bool final) {
    if (g_ack_fd < 0) return;
    if (atomic_load(&g_unflushed) == 0) {
        /* Nothing new since the last profile. At exit the collector sees the process end and leaves. */
        if (final) {
            close(g_ack_fd);
            g_ack_fd = -1;
        }
        return;
    }
    ggprof_busy++;
    atomic_store(&g_unflushed, 0);
    ggprof_msg_flush m = { { sizeof(m), GGPROF_MSG_FLUSH, 0 }, ++g_flush_seq, final };
    if (ggprof_emit(&m.h) == 0) {
        struct pollfd p = { g_ack_fd, POLLIN, 0 };
        char c;
        /* Bounded: a collector that died must not hang the program. */
        if (poll(&p, 1, 120000) > 0 && read(g_ack_fd, &c, 1) != 1) { /* EOF: the collector is gone */ }
    }
    if (final) {
        close(g_ack_fd);
        g_ack_fd = -1;
    }
    ggprof_busy--;
}

void ggprof_profile_sched_freed(void) { profile_flush(false); }
void ggprof_profile_graph_recorded(void) { atomic_fetch_add_explicit(&g_unflushed, 1, memory_order_relaxed); }

static void profile_at_exit(void) { profile_flush(true); }

static void sink_init(void) {
    ggprof_busy++;
    ggprof_eng.pid   = (int32_t) getpid();
    const char *ring = getenv("GGPROF_RING");
    const char *profile = getenv("GGML_PROFILE");
    char why[256];
    if (ring && *ring) {
        if (ggprof_ring_attach(&g_ring, ring, why, sizeof(why)) != 0) {
            fprintf(stderr, "ggprof: profiling off: %s\n", why);
        } else {
            g_sink_ok = true;
        }
    } else if (profile) {
        if (start_collector(profile, why, sizeof(why)) != 0) {
            fprintf(stderr, "ggprof: profiling off: %s\n", why);
        } else {
            atexit(profile_at_exit);
            g_sink_ok = true;
        }
    }
    if (g_sink_ok) {
        ggprof_eng.level         = (int) g_ring.file->level;
        ggprof_eng.serialize_gpu = (g_ring.file->flags & GGPROF_RING_SERIALIZE) != 0;
        ggprof_eng.alternate     = (g_ring.file->flags & GGPROF_RING_ALTERNATE) != 0;
        pthread_key_create(&g_slot_key, slot_destructor);
        pthread_atfork(NULL, NULL, after_fork_child);
    }
    ggprof_busy--;
}

static bool ggprof_sink_ready(void) {
    pthread_once(&g_sink_once, sink_init);
    return g_sink_ok;
}

bool ggprof_ticks_wanted(void) {
    return !ggprof_eng.broken && ggprof_sink_ready() && ggprof_eng.level >= GGPROF_LEVEL_OP;
}

bool ggprof_device_ready(void) {
    if (!ggprof_sink_ready()) return false;
    int expect = 0;
    if (atomic_compare_exchange_strong(&g_process_sent, &expect, 1)) emit_process();
    return !ggprof_busy;
}

/* Finds ggml and checks it whether or not a sink exists: the seed's C API may turn profiling on later. */
static void engine_init(void) {
    bool sink = ggprof_sink_ready();
    ggprof_busy++;
    ggprof_ggml *g = &ggprof_eng.g;
    Dl_info info;
    if (!dladdr(g_base_fn, &info) || !info.dli_fname) {
        ggprof_note("profiling off: cannot locate the ggml library");
        goto broken;
    }
    snprintf(g->lib, sizeof(g->lib), "%s", info.dli_fname);
    void *h = dlopen(info.dli_fname, RTLD_NOLOAD | RTLD_LAZY);
    if (!h) {
        ggprof_note("profiling off: cannot reopen %s", info.dli_fname);
        goto broken;
    }
    bool have_all = load_functions(g, h);
    dlclose(h); /* the program keeps it loaded: RTLD_NOLOAD took a reference only */
    if (!have_all) goto broken;
    char why[160];
    if (!check_abi(g, why, sizeof(why))) {
        ggprof_note("profiling off: ggml %s at %s is not a ggml this ggprof understands: %s",
                    g->ggml_version ? g->ggml_version() : "(no version)", g->lib, why);
        goto broken;
    }
    const char *fusion = getenv("GGML_CPU_DISABLE_FUSION"); /* read as ggml-cpu.c reads it */
    ggprof_eng.cpu_fusion = !(fusion && atoi(fusion) == 1);
    g->ok              = true;
    ggprof_eng.enabled = sink;
    if (sink) {
        atomic_store(&g_process_sent, 1);
        emit_process();
    }
    goto done;
broken:
    ggprof_eng.broken = true;
done:
    ggprof_busy--;
}

bool ggprof_api_activate(const void *real_fn_in_ggml_base) {
    if (g_base_fn == NULL) g_base_fn = real_fn_in_ggml_base;
    pthread_once(&g_init_once, engine_init);
    if (!ggprof_eng.g.ok) return false;
    pthread_mutex_lock(&g_lock);
    if (!g_keep_descs) {
        /* Nodes already described were not kept: forget them, so that each is described (and kept) again. */
        g_keep_descs = true;
        for (uint32_t i = 0; i < NODE_CACHE_SIZE; i++) atomic_store(&g_nodes[i].key, 0);
        atomic_fetch_add(&g_desc_epoch, 1);
    }
    pthread_mutex_unlock(&g_lock);
    if (!g_sink_ok) ggprof_eng.level = GGPROF_LEVEL_OP;
    ggprof_eng.enabled = true;
    return true;
}

/* ---- ggprof's own API: pause and resume, regions ---- */

GGPROF_API void ggprof_pause(void) {
    if (g_ring.file) atomic_store(&g_ring.file->recording, 0);
}

GGPROF_API void ggprof_resume(void) {
    if (g_ring.file) atomic_store(&g_ring.file->recording, 1);
}

GGPROF_API int ggprof_recording(void) { return g_ring.file && atomic_load(&g_ring.file->recording) ? 1 : 0; }

#define MAX_REGION_DEPTH 32
static __thread struct {
    uint64_t start_ns;
    char     name[GGPROF_MAX_NAME];
} t_regions[MAX_REGION_DEPTH];
static __thread int t_region_depth;

GGPROF_API void ggprof_region_begin(const char *name) {
    if (t_region_depth < MAX_REGION_DEPTH) {
        snprintf(t_regions[t_region_depth].name, GGPROF_MAX_NAME, "%s", name ? name : "");
        t_regions[t_region_depth].start_ns = ggprof_now_ns();
    }
    t_region_depth++;
}

GGPROF_API void ggprof_region_end(void) {
    if (t_region_depth == 0) return;
    int d = --t_region_depth;
    if (d >= MAX_REGION_DEPTH || !ggprof_device_ready()) return;
    ggprof_msg_region m;
    memset(&m, 0, sizeof(m));
    m.h        = (ggprof_msg_hdr){ sizeof(m), GGPROF_MSG_REGION, 0 };
    m.start_ns = t_regions[d].start_ns;
    m.end_ns   = ggprof_now_ns();
    m.depth    = (uint32_t) d;
    memcpy(m.name, t_regions[d].name, sizeof(m.name));
    ggprof_emit(&m.h);
}

bool ggprof_engine_ready(const void *real_fn_in_ggml_base) {
    if (ggprof_eng.broken) return false;
    if (g_base_fn == NULL) g_base_fn = real_fn_in_ggml_base;
    pthread_once(&g_init_once, engine_init);
    return ggprof_eng.enabled && !ggprof_busy;
}

/* ---- resolving the real functions ---- */

struct find_ctx {
    const char *name;
    const void *self;
    void       *found;
};

static int find_in_object(struct dl_phdr_info *info, size_t size, void *data) {
    (void) size;
    struct find_ctx *f = data;
    if (!info->dlpi_name || !info->dlpi_name[0]) return 0;
    void *h = dlopen(info->dlpi_name, RTLD_NOLOAD | RTLD_LAZY);
    if (!h) return 0;
    void *p = dlsym(h, f->name);
    dlclose(h);
    if (p && p != f->self) {
        f->found = p;
        return 1;
    }
    return 0;
}

void *ggprof_resolve_real(const char *name, const void *caller, const void *self) {
    /* The caller's own library sees ggml even when ggml was loaded with RTLD_LOCAL (node-llama-cpp), where
     * RTLD_NEXT finds nothing; RTLD_NEXT covers callers in the main program. */
    Dl_info info;
    if (caller && dladdr(caller, &info) && info.dli_fname && info.dli_fname[0]) {
        void *h = dlopen(info.dli_fname, RTLD_NOLOAD | RTLD_LAZY);
        if (h) {
            void *p = dlsym(h, name);
            dlclose(h);
            if (p && p != self) return p;
        }
    }
    void *p = dlsym(RTLD_NEXT, name);
    if (p && p != self) return p;
    /* Last resort, for a caller that reached us through a function pointer (a backend's proc address points
     * at our wrapper, since its GOT entry is interposed too) while the definer was loaded RTLD_LOCAL: ask
     * every loaded object. */
    struct find_ctx f = { name, self, NULL };
    dl_iterate_phdr(find_in_object, &f);
    return f.found;
}

void ggprof_missing_real(const char *name) {
    fprintf(stderr, "ggprof: fatal: cannot find the real %s to forward to\n", name);
    abort();
}
