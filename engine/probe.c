/* Finding the ggml a program loaded and checking it: its functions, its tensor layout, its op ids. */
#include <ctype.h>
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "elf_image.h"
#include "internal.h"
#include "reach.h"

/* The optional functions missing for one feature, appended to names (the feature's note lists them). */
static const char *feature_of(const char *feature) { return feature ? feature : ""; }

static void note_missing(char *names, size_t names_len, const char *fn, const char *feature, const char *which) {
    if (strcmp(feature, which) != 0) return;
    size_t n = strlen(names);
    snprintf(names + n, names_len - n, "%s%s", n ? ", " : "", fn);
}

/* ggml_graph_nodes where an LTO build inlined it away: the field of struct ggml_cgraph (stable since 2024; check_abi
 * compares it with a probe graph's nodes before any real graph is read). */
static struct ggml_tensor **layout_graph_nodes(struct ggml_cgraph *gr) {
    return (struct ggml_tensor **) ((const struct ggml_cgraph_abi *) gr)->nodes;
}

/* The head of struct ggml_backend_sched (ggml-backend.cpp, unchanged since 2024): two bools, the backend count, the
 * backends. Read only where both accessors were inlined away; a count outside 1..16 reads as none. */
struct sched_head {
    bool           is_reset, is_alloc;
    int            n_backends;
    ggml_backend_t backends[1];
};
static int layout_sched_n_backends(ggml_backend_sched_t s) {
    int n = ((const struct sched_head *) s)->n_backends;
    return n >= 1 && n <= 16 ? n : 0;
}
static ggml_backend_t layout_sched_backend(ggml_backend_sched_t s, int i) {
    return i >= 0 && i < layout_sched_n_backends(s) ? ((const struct sched_head *) s)->backends[i] : NULL;
}

/* ggml_new_graph where only ggml_new_graph_custom is left: ggml's default size, no gradients. */
static struct ggml_cgraph *(*g_new_graph_custom)(struct ggml_context *, size_t, bool);
static struct ggml_cgraph *default_new_graph(struct ggml_context *ctx) { return g_new_graph_custom(ctx, 2048, false); }

/* The version where ggml_version is missing (LTO dropped it, or a release before mid 2025 had none): llama.cpp's build
 * info, data in the same image (common/build-info.cpp: LLAMA_BUILD_NUMBER, and LLAMA_COMMIT pointing at the commit
 * string), as llama_build_info() spells it, named as llama.cpp's so that it is not read as ggml's. Read from the
 * file, never by calling code; a commit with anything but [0-9A-Za-z._-] is cut there. */
static char        g_image_version[32];
static const char *image_version(void) { return g_image_version; }

static bool version_from_image(const ggprof_elf *e) {
    size_t      size   = 0;
    const void *number = e ? ggprof_elf_data(e, "LLAMA_BUILD_NUMBER", &size) : NULL;
    const char *commit = number && size == sizeof(int32_t) ? ggprof_elf_pointed_string(e, "LLAMA_COMMIT", 64) : NULL;
    if (!commit) return false;
    int32_t b;
    memcpy(&b, number, sizeof(b));
    int n = 0;
    while (n < 16 && commit[n] && (isalnum((unsigned char) commit[n]) || strchr("._-", commit[n]))) n++;
    snprintf(g_image_version, sizeof(g_image_version), "llama.cpp b%d-%.*s", (int) b, n, commit);
    return true;
}

static void *find_sym(void *h, const ggprof_elf *e, const char *name) {
    void *p = h ? dlsym(h, name) : NULL;
    return p ? p : e ? (void *) ggprof_elf_func(e, name, NULL) : NULL;
}

/* Every function the engine needs, from the ggml the program loaded: a missing one turns off the feature it
 * serves (a note names both), or the engine when it serves them all. */
static bool load_functions(ggprof_ggml *g, void *h, const ggprof_elf *e) {
    char missing[160] = "";
    int  n_missing = 0;
#define X(ret, name, args, feature)                                                                            \
    g->fn_##name = (ret(*) args) find_sym(h, e, #name);                                                        \
    if (g->fn_##name == NULL && feature == GGML_NEEDED && n_missing++ < 4) {                                   \
        size_t k = strlen(missing);                                                                            \
        snprintf(missing + k, sizeof(missing) - k, "%s%s", k ? ", " : "", #name);                              \
    }
    GGPROF_GGML_FUNCS(X)
#undef X
    if (n_missing) {
        /* One line for all of them: where ggml is inside a program, LTO may have inlined or dropped many. */
        const char *base = strrchr(g->lib, '/') ? strrchr(g->lib, '/') + 1 : g->lib;
        ggprof_note("profiling off: %d function%s the engine needs %s not in %s (%s%s)%s", n_missing,
                    n_missing == 1 ? "" : "s", n_missing == 1 ? "is" : "are", base, missing,
                    n_missing > 4 ? ", ..." : "", ggprof_reach_embedded() ? ": inlined or left out by the linker" : "");
        return false;
    }
    /* What an LTO build inlined away, done without (GGML_FROM_LAYOUT in ggml_abi.h); check_abi tests each. */
    char done_without[256] = "";
#define WITHOUT(fn, instead)                                                                                   \
    if (!g->fn_##fn) {                                                                                         \
        g->fn_##fn = instead;                                                                                  \
        size_t k = strlen(done_without);                                                                       \
        snprintf(done_without + k, sizeof(done_without) - k, "%s%s", k ? ", " : "", #fn);                      \
    }
    if (!g->fn_ggml_new_graph && !g->fn_ggml_new_graph_custom) {
        ggprof_note("profiling off: neither ggml_new_graph nor ggml_new_graph_custom found in %s", g->lib);
        return false;
    }
    g_new_graph_custom = g->fn_ggml_new_graph_custom;
    WITHOUT(ggml_new_graph, default_new_graph)
    WITHOUT(ggml_graph_nodes, layout_graph_nodes)
    WITHOUT(ggml_backend_sched_get_n_backends, layout_sched_n_backends)
    WITHOUT(ggml_backend_sched_get_backend, layout_sched_backend)
#undef WITHOUT
    if (!g->fn_ggml_version && version_from_image(e)) {
        g->fn_ggml_version = image_version;
        ggprof_trace_note("%s has no ggml_version: the version recorded is llama.cpp's build info in its image "
                          "(LLAMA_BUILD_NUMBER, LLAMA_COMMIT): %s", g->lib, g_image_version);
    }
    if (done_without[0]) {
        ggprof_trace_note("%s has no %s (inlined): read from ggml's structures instead, checked on probes", g->lib,
                          done_without);
    }
    /* One note per feature that goes: a note is a line of GGPROF_MAX_STR, and a long list would cut off what goes. */
    const char *base = strrchr(g->lib, '/') ? strrchr(g->lib, '/') + 1 : g->lib;
    const char *done[32];
    int         n_done = 0;
#define X(ret, name, args, feature)                                                                            \
    if (g->fn_##name == NULL && feature_of(feature)[0] && strcmp(feature_of(feature), GGML_FROM_LAYOUT) != 0 &&  \
        n_done < 32) {                                                                                         \
        int seen = 0;                                                                                          \
        for (int i = 0; i < n_done; i++) seen |= strcmp(done[i], feature_of(feature)) == 0;                    \
        if (!seen) done[n_done++] = feature_of(feature);                                                       \
    }
    GGPROF_GGML_FUNCS(X)
#undef X
    for (int i = 0; i < n_done; i++) {
        char names[512] = "";
#define X(ret, name, args, feature)                                                                            \
        if (g->fn_##name == NULL) note_missing(names, sizeof(names), #name, feature_of(feature), done[i]);
        GGPROF_GGML_FUNCS(X)
#undef X
        ggprof_note("%s has no %s: profiling goes on without %s", base, names, done[i]);
    }
    return true;
}

/* ggml_graph_view's result, read through our mirror, must agree with the public accessors: only then may the
 * engine compute one node at a time (serialized timing of non-CPU backends). */
static bool check_graph_view(ggprof_ggml *g, struct ggml_cgraph *gr) {
    int n = g->fn_ggml_graph_n_nodes(gr);
    if (!g->fn_ggml_graph_view || !g->fn_ggml_backend_synchronize || n < 2) return false;
    ggml_cgraph_view_buf v = g->fn_ggml_graph_view(gr, 1, n);
    return v.g.n_nodes == n - 1 && (void *) v.g.nodes == (void *) (g->fn_ggml_graph_nodes(gr) + 1) && v.g.size == 0;
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
        if (g->fn_ggml_tensor_overhead() < g->links_off + sizeof(struct ggml_tensor_links)) continue;
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
    if (g->fn_ggml_tensor_overhead() < sizeof(struct ggml_tensor)) {
        snprintf(why, why_len, "ggml_tensor_overhead() %zu < %zu", g->fn_ggml_tensor_overhead(),
                 sizeof(struct ggml_tensor));
        return false;
    }
    struct ggml_init_params ip = { 32 * g->fn_ggml_tensor_overhead() + (2u << 20), NULL, true }; /* room for a graph */
    struct ggml_context *ctx = g->fn_ggml_init(ip);
    if (!ctx) {
        snprintf(why, why_len, "ggml_init failed");
        return false;
    }
    bool ok = false;
    const int32_t F16 = 1; /* ggml.h: GGML_TYPE_F16 = 1 since the first release */
    struct ggml_tensor *a = g->fn_ggml_new_tensor_2d(ctx, GGML_ABI_TYPE_F32, 4, 5);
    struct ggml_tensor *b = g->fn_ggml_new_tensor_2d(ctx, GGML_ABI_TYPE_F32, 4, 5);
    struct ggml_tensor *h = g->fn_ggml_new_tensor_2d(ctx, F16, 6, 3);
    g->fn_ggml_set_name(a, "ggprof_probe_a");
    g->fn_ggml_set_output(b);
    if (a->type != GGML_ABI_TYPE_F32 || a->ne[0] != 4 || a->ne[1] != 5 || a->ne[2] != 1 || a->nb[0] != 4 ||
        a->nb[1] != 16 || h->type != F16 || h->nb[1] != 12 || (b->flags & GGML_ABI_FLAG_OUTPUT) == 0 ||
        g->fn_ggml_nbytes(h) != 36) {
        snprintf(why, why_len, "struct ggml_tensor layout differs (type/ne/nb/flags)");
        goto out;
    }
    struct ggml_tensor *add = g->fn_ggml_add(ctx, a, b);
    struct ggml_tensor *mul = g->fn_ggml_mul(ctx, a, b);
    struct ggml_tensor *rms = g->fn_ggml_rms_norm(ctx, a, 1e-5f);
    struct ggml_tensor *rsh = g->fn_ggml_reshape_2d(ctx, a, 5, 4);
    struct ggml_tensor *vw  = g->fn_ggml_view_1d(ctx, a, 3, 4);
    struct ggml_tensor *prm = g->fn_ggml_permute(ctx, a, 1, 0, 2, 3);
    struct ggml_tensor *trn = g->fn_ggml_transpose(ctx, a);
    struct ggml_tensor *un  = g->fn_ggml_relu(ctx, a);
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
    if (g->fn_ggml_swiglu && g->fn_ggml_glu_op_name) g->op.glu = g->fn_ggml_swiglu(ctx, a)->op;
    struct ggml_cgraph *gr = g->fn_ggml_new_graph(ctx);
    if (!gr) {
        snprintf(why, why_len, "ggml_new_graph failed");
        goto out;
    }
    g->fn_ggml_build_forward_expand(gr, add);
    g->fn_ggml_build_forward_expand(gr, rms);
    if (g->fn_ggml_graph_n_nodes(gr) != 2 || g->fn_ggml_graph_nodes(gr)[0] != add ||
        g->fn_ggml_graph_nodes(gr)[1] != rms) {
        snprintf(why, why_len, "the probe graph's nodes do not read back (ggml_graph_nodes)");
        goto out;
    }
    g->has_compute_flag = (add->flags & GGML_ABI_FLAG_COMPUTE) != 0;
    g->graph_view_ok    = check_graph_view(g, gr);
    if (strcmp(g->fn_ggml_op_name(add->op), "ADD") != 0 || strcmp(g->fn_ggml_op_name(rms->op), "RMS_NORM") != 0 ||
        strcmp(g->fn_ggml_op_name(vw->op), "VIEW") != 0) {
        snprintf(why, why_len, "ggml_op_name disagrees with the probe graph");
        goto out;
    }
    ok = true;
out:
    g->fn_ggml_free(ctx);
    return ok;
}


/* The handle of the object at g->lib, and its ELF image: ggml inside a program exports few or none of its
 * functions. The executable gets no handle: dlsym on it would search the whole global scope, libggprof.so's
 * wrappers included. */
static void *open_object(const ggprof_ggml *g, ggprof_elf *e, bool *have_elf) {
    *have_elf = ggprof_elf_open(e, g->lib, g->bias);
    return g->lib_is_main ? NULL : dlopen(g->lib, RTLD_NOLOAD | RTLD_LAZY);
}

void *ggprof_ggml_sym(const ggprof_ggml *g, const char *name) {
    bool       have_elf = false;
    ggprof_elf e;
    void *h = open_object(g, &e, &have_elf);
    void *p = find_sym(h, have_elf ? &e : NULL, name);
    if (h) dlclose(h);
    if (have_elf) ggprof_elf_close(&e);
    return p;
}

bool ggprof_ggml_find(ggprof_ggml *g, const void *fn_in_ggml) {
    if (!fn_in_ggml || !ggprof_object_of(fn_in_ggml, g->lib, sizeof(g->lib), &g->bias, &g->lib_is_main)) {
        ggprof_note("profiling off: cannot locate the ggml library");
        return false;
    }
    ggprof_elf e;
    bool  have_elf = false;
    void *h = open_object(g, &e, &have_elf);
    if (!h && !have_elf) {
        ggprof_note("profiling off: cannot reopen %s", g->lib);
        return false;
    }
    bool have_all = load_functions(g, h, have_elf ? &e : NULL);
    if (h) dlclose(h); /* the program keeps it loaded: RTLD_NOLOAD took a reference only */
    if (have_elf) ggprof_elf_close(&e);
    if (!have_all) return false;
    char why[160];
    if (!check_abi(g, why, sizeof(why))) {
        ggprof_note("profiling off: ggml %s at %s is not a ggml this ggprof understands: %s",
                    g->fn_ggml_version ? g->fn_ggml_version() : "(no version)", g->lib, why);
        return false;
    }
    return true;
}
