/* Unit tests of device kernel tracing without a device: clock mapping, launch correlation, the CUPTI library. */
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "corr_table.h"
#include "graph_map.h"
#include "clock_map.h"
#include "harness.h"
#include "ring.h"

/* ---- clock_map.h ---- */

static ggprof_clock_sample sample(uint64_t host, uint64_t half, uint64_t device) {
    return (ggprof_clock_sample){ host - half, host + half, device };
}

static void test_best_sample_is_the_tightest_valid_one(void) {
    ggprof_clock_sample s[4] = { sample(1000, 50, 1), sample(2000, 5, 2), { 3000, 2990, 3 }, sample(4000, 20, 4) };
    CHECK_EQ_INT(ggprof_clock_best(s, 4), 1);
    CHECK_EQ_INT(ggprof_clock_best(s, 1), 0);
    CHECK_EQ_INT(ggprof_clock_best(&s[2], 1), -1); /* an inverted bracket is no reading */
    CHECK_EQ_INT(ggprof_clock_best(s, 0), -1);
}

static void test_offset_maps_device_to_host_across_wraparound(void) {
    /* A device clock near the top of 64 bits, the host's small: the mapping is modular. */
    const uint64_t dev0 = UINT64_MAX - 5000, host0 = 1000000;
    ggprof_clock_map m;
    memset(&m, 0, sizeof(m));
    CHECK(ggprof_clock_calibrate(&m, &(ggprof_clock_sample){ host0 - 100, host0 + 100, dev0 }));
    CHECK(m.valid);
    CHECK_EQ_INT(m.uncertainty, 100);
    CHECK_EQ_INT(ggprof_clock_to_host(&m, dev0), host0);
    CHECK_EQ_INT(ggprof_clock_to_host(&m, dev0 + 20000), host0 + 20000); /* past the device clock's wrap */
    CHECK_EQ_INT(ggprof_clock_drift_ppm(&m), 0);
}

static void test_consistent_calibrations_keep_the_offset(void) {
    /* Same clocks, brackets of varying width: the offset adopted first stays, so times never step back. */
    ggprof_clock_map m;
    memset(&m, 0, sizeof(m));
    const uint64_t skew = 123456789;
    ggprof_clock_calibrate(&m, &(ggprof_clock_sample){ 1000, 1400, 1200 - skew });
    uint64_t first = m.offset;
    for (int i = 1; i <= 10; i++) {
        uint64_t h = 1000 + (uint64_t) i * 1000000000ull;
        /* the device read somewhere in the bracket, not always in its middle */
        CHECK(!ggprof_clock_calibrate(&m, &(ggprof_clock_sample){ h, h + 300, h + 50 * (uint64_t) (i % 4) - skew }));
    }
    CHECK_EQ_INT(m.offset, first);
    CHECK_EQ_INT(m.n_reanchors, 0);
    CHECK_EQ_INT(m.n_calibrations, 11);
}

static void test_drift_reanchors_and_is_measured(void) {
    /* The device clock runs 50 ppm slow: 50 us per second. Brackets of +-1 us: the offset must follow. */
    ggprof_clock_map m;
    memset(&m, 0, sizeof(m));
    for (int i = 0; i <= 20; i++) {
        uint64_t host = 5000000000ull + (uint64_t) i * 1000000000ull;
        uint64_t dev  = 7000000000000ull + (uint64_t) i * (1000000000ull - 50000ull);
        ggprof_clock_calibrate(&m, &(ggprof_clock_sample){ host - 1000, host + 1000, dev });
        /* whatever happened before, the time now maps within the brackets' width */
        int64_t err = ggprof_clock_diff(ggprof_clock_to_host(&m, dev), host);
        CHECK(err >= -2000 && err <= 2000);
    }
    CHECK_EQ_INT(m.n_reanchors, 20);
    CHECK_EQ_INT(m.max_step_ns, 50000);
    double ppm = ggprof_clock_drift_ppm(&m);
    CHECK(ppm > 49.99 && ppm < 50.01);
    double bound = ggprof_clock_drift_bound_ppm(&m); /* (1 us + 1 us) over 20 s */
    CHECK(bound > 0.0999 && bound < 0.1001);
}

static void test_check_measures_how_far_outside(void) {
    ggprof_clock_map m;
    memset(&m, 0, sizeof(m));
    ggprof_clock_calibrate(&m, &(ggprof_clock_sample){ 10000, 10000, 0 }); /* host = device + 10000 */
    CHECK_EQ_INT(ggprof_clock_check(&m, &(ggprof_clock_sample){ 10400, 10600, 500 }), 0);
    CHECK_EQ_INT(ggprof_clock_check(&m, &(ggprof_clock_sample){ 10700, 10800, 500 }), 200); /* early */
    CHECK_EQ_INT(ggprof_clock_check(&m, &(ggprof_clock_sample){ 10100, 10450, 500 }), 50);  /* late */
    CHECK_EQ_INT(m.n_checked, 3);
    CHECK_EQ_INT(m.max_outside_ns, 200);
}

/* ---- corr_table.h ---- */

static ggprof_corr_table g_corr;

/* Field by field: the struct has padding at its end. */
static bool same_place(const ggprof_place *a, const ggprof_place *b) {
    return a->graph_id == b->graph_id && a->sched_id == b->sched_id && a->split_id == b->split_id &&
           a->backend_id == b->backend_id && a->node_start == b->node_start && a->n_nodes == b->n_nodes &&
           a->node_index == b->node_index && a->node_id == b->node_id;
}

static void test_correlation_round_trip(void) {
    ggprof_place p = { 42, 3, -1, -1, 17, 250, 31, 9001 }, out;
    memset(&out, 0, sizeof(out));
    CHECK(!ggprof_corr_get(&g_corr, 9, &out));
    ggprof_corr_put(&g_corr, 9, &p);
    CHECK(ggprof_corr_get(&g_corr, 9, &out));
    CHECK(same_place(&p, &out));
    CHECK(!ggprof_corr_get(&g_corr, 10, &out));
    /* 2^16 launches later the slot holds a newer launch: the old id is gone, not mistaken for it. */
    ggprof_place q = { GGPROF_GRAPH_NONE, 0, 5, 2, 0, 1, -1, 0 };
    ggprof_corr_put(&g_corr, 9 + GGPROF_CORR_SIZE, &q);
    CHECK(!ggprof_corr_get(&g_corr, 9, &out));
    CHECK(ggprof_corr_get(&g_corr, 9 + GGPROF_CORR_SIZE, &out));
    CHECK(same_place(&q, &out));
    CHECK_EQ_INT(ggprof_corr_get(&g_corr, UINT32_MAX, &out), 0);
    ggprof_corr_put(&g_corr, UINT32_MAX, &p);
    CHECK(ggprof_corr_get(&g_corr, UINT32_MAX, &out));
}

/* A launching thread rewrites one slot while CUPTI's thread reads it: a reader gets a whole launch or none. */
#define N_WRITES 2000000
static _Atomic int g_stop;

static ggprof_place place_of(uint32_t corr) {
    return (ggprof_place){ corr * 3ull, corr ^ 0x5a5a, (int32_t) corr, -(int32_t) (corr & 0xff), (int32_t) corr / 2,
                           (int32_t) corr % 977, (int32_t) corr % 131 - 1, corr ^ 0x3333 };
}

static void *writer(void *arg) {
    (void) arg;
    for (uint32_t i = 0; i < N_WRITES; i++) {
        ggprof_place p = place_of(7 + i * GGPROF_CORR_SIZE);
        ggprof_corr_put(&g_corr, 7 + i * GGPROF_CORR_SIZE, &p);
        if (i % 4096 == 0) sched_yield(); /* on a loaded machine, let the reader run while this one writes */
    }
    atomic_store(&g_stop, 1);
    return NULL;
}

static void test_correlation_reads_are_never_torn(void) {
    pthread_t t;
    pthread_create(&t, NULL, writer, NULL);
    long reads = 0, torn = 0;
    while (!atomic_load(&g_stop)) {
        uint32_t k = (uint32_t) atomic_load_explicit(&g_corr.e[7].key, memory_order_relaxed);
        if (k == 0) continue;
        ggprof_place out, want = place_of(k - 1);
        reads++;
        if (ggprof_corr_get(&g_corr, k - 1, &out)) torn += !same_place(&out, &want);
    }
    pthread_join(t, NULL);
    CHECK_EQ_INT(torn, 0);
    CHECK(reads > 0); /* the reader did race the writer */
}

/* ---- graph_map.h: CUDA kernels to ggml nodes, from recorded launch / capture / kernel sequences ---- */

static ggprof_gmap g_gmap = GGPROF_GMAP_INIT;

/* Where the engine is while ggml-cuda computes node `index` of a split of graph `graph` that starts at `start`. */
static ggprof_place at_node(uint64_t graph, int32_t start, int32_t n, int32_t index) {
    return (ggprof_place){ graph, 1, 2, 0, start, n, index, index >= 0 ? 7000u + (uint32_t) index : 0 };
}

static void test_cuda_direct_launches_keep_their_node(void) {
    /* ggml-cuda without graphs: each kernel is launched while its node is current. */
    ggprof_place p = at_node(10, 20, 6, 23), out = { 0 };
    ggprof_corr_put(&g_corr, 100, &p);
    CHECK_EQ_INT(ggprof_cuda_attribute(&g_corr, &g_gmap, 100, 0, &out), GGPROF_CUDA_ATTR_NODE);
    CHECK_EQ_INT(out.node_index, 23);
    CHECK_EQ_INT(out.node_id, 7023);
    /* launched in a split before any node was marked (a backend that does not ask ggml_is_empty): split only */
    p = at_node(10, 20, 6, -1);
    ggprof_corr_put(&g_corr, 101, &p);
    CHECK_EQ_INT(ggprof_cuda_attribute(&g_corr, &g_gmap, 101, 0, &out), GGPROF_CUDA_ATTR_SPLIT);
    CHECK_EQ_INT(out.graph_id, 10);
    CHECK_EQ_INT(out.node_index, -1);
    /* never launched from a split (or overwritten since) */
    CHECK_EQ_INT(ggprof_cuda_attribute(&g_corr, &g_gmap, 102, 0, &out), GGPROF_CUDA_ATTR_NONE);
}

static void test_cuda_graph_replays_find_the_captured_node(void) {
    /* Capture of a split (graph 10, nodes 20..25): node 20 one kernel, 21 fused into 20 (none), 22 one, 23 two;
     * 24 and 25 are views (no kernel). The CUDA node ids are CUPTI's. */
    const uint64_t captured[4] = { 1001, 1002, 1003, 1004 }, exec[4] = { 2001, 2002, 2003, 2004 };
    const int32_t  node_of[4]  = { 20, 22, 23, 23 };
    for (int i = 0; i < 4; i++) {
        ggprof_place p = at_node(10, 20, 6, node_of[i]);
        CHECK(ggprof_gmap_created(&g_gmap, captured[i], &p));
    }
    /* a node created outside any ggml node (a memset before the first node is marked) is not mapped */
    ggprof_place none = at_node(10, 20, 6, -1);
    CHECK(!ggprof_gmap_created(&g_gmap, 1005, &none));
    /* cudaGraphInstantiate clones them; ggml-cuda then destroys the captured graph */
    for (int i = 0; i < 4; i++) CHECK(ggprof_gmap_cloned(&g_gmap, exec[i], captured[i]));
    CHECK(!ggprof_gmap_cloned(&g_gmap, 2005, 1005));
    for (int i = 0; i < 4; i++) ggprof_gmap_drop(&g_gmap, captured[i]);
    /* Replayed for the next token's graph (11): one cudaGraphLaunch, while the engine's current node is the last
     * one ggml-cuda looked at (25, stale for the kernels). */
    ggprof_place launch = at_node(11, 20, 6, 25), out = { 0 };
    ggprof_corr_put(&g_corr, 500, &launch);
    for (int i = 0; i < 4; i++) {
        CHECK_EQ_INT(ggprof_cuda_attribute(&g_corr, &g_gmap, 500, exec[i], &out), GGPROF_CUDA_ATTR_NODE);
        CHECK_EQ_INT(out.graph_id, 11);
        CHECK_EQ_INT(out.node_index, node_of[i]);
        CHECK_EQ_INT(out.node_id, 7000u + (uint32_t) node_of[i]);
    }
    /* the same split one scheduler later in the graph (node_start 40): same offsets */
    launch = at_node(12, 40, 6, 45);
    ggprof_corr_put(&g_corr, 501, &launch);
    CHECK_EQ_INT(ggprof_cuda_attribute(&g_corr, &g_gmap, 501, exec[2], &out), GGPROF_CUDA_ATTR_NODE);
    CHECK_EQ_INT(out.node_index, 43);
    /* a graph node never mapped, or one whose offset lies past the launching split's end: the split only */
    CHECK_EQ_INT(ggprof_cuda_attribute(&g_corr, &g_gmap, 500, 9999, &out), GGPROF_CUDA_ATTR_SPLIT);
    CHECK_EQ_INT(out.node_index, -1);
    launch = at_node(13, 20, 3, 22);
    ggprof_corr_put(&g_corr, 502, &launch);
    CHECK_EQ_INT(ggprof_cuda_attribute(&g_corr, &g_gmap, 502, exec[2], &out), GGPROF_CUDA_ATTR_SPLIT);
    /* the captured nodes are gone; the executable graph destroyed, its nodes too */
    CHECK_EQ_INT(ggprof_cuda_attribute(&g_corr, &g_gmap, 500, captured[0], &out), GGPROF_CUDA_ATTR_SPLIT);
    for (int i = 0; i < 4; i++) ggprof_gmap_drop(&g_gmap, exec[i]);
    CHECK_EQ_INT(ggprof_cuda_attribute(&g_corr, &g_gmap, 500, exec[0], &out), GGPROF_CUDA_ATTR_SPLIT);
    CHECK_EQ_INT(g_gmap.n, 0);
}

static void test_graph_map_drops_keep_probe_chains_and_fill_stops(void) {
    /* Many keys, dropped in another order than added: every key left is still found (backward shift). */
    enum { N = 50000 };
    for (uint64_t k = 1; k <= N; k++) CHECK(ggprof_gmap_put(&g_gmap, k * 977, (int32_t) k, (uint32_t) k));
    for (uint64_t k = 1; k <= N; k += 3) ggprof_gmap_drop(&g_gmap, k * 977);
    int32_t  off;
    uint32_t id;
    long     found = 0, wrong = 0;
    for (uint64_t k = 1; k <= N; k++) {
        bool f = ggprof_gmap_get(&g_gmap, k * 977, &off, &id);
        found += f;
        wrong += f != ((k - 1) % 3 != 0) || (f && (off != (int32_t) k || id != (uint32_t) k));
    }
    CHECK_EQ_INT(wrong, 0);
    CHECK_EQ_INT(found, N - (N + 2) / 3);
    CHECK_EQ_INT(g_gmap.n, found);
    for (uint64_t k = 1; k <= N; k++) ggprof_gmap_drop(&g_gmap, k * 977);
    CHECK_EQ_INT(g_gmap.n, 0);
    /* a full table maps nothing more, and says so */
    uint64_t k = 1;
    while (ggprof_gmap_put(&g_gmap, k, 0, 1)) k++;
    CHECK_EQ_INT(k - 1, GGPROF_GMAP_SIZE / 8 * 7);
    CHECK(ggprof_gmap_put(&g_gmap, 1, 5, 2)); /* an existing key is still updated */
    for (uint64_t j = 1; j < k; j++) ggprof_gmap_drop(&g_gmap, j);
    CHECK_EQ_INT(g_gmap.n, 0);
}

/* ---- libggprof-cupti.so, loaded as the CUDA driver would, on a machine without a GPU ---- */

static char g_lib_dir[PATH_MAX];

static bool lib_path(char *out, size_t len, const char *name) {
    snprintf(out, len, "%s/%s", g_lib_dir, name);
    return access(out, R_OK) == 0;
}

typedef struct {
    int  n_notes;
    char text[8][GGPROF_MAX_STR];
} notes_t;

static void on_msg(const ggprof_ring_slot *slot, const ggprof_msg_hdr *m, void *user) {
    (void) slot;
    notes_t *n = user;
    if (m->kind == GGPROF_MSG_NOTE && n->n_notes < 8) {
        memcpy(n->text[n->n_notes++], ((const ggprof_msg_note *) m)->text, GGPROF_MAX_STR);
    }
}

static void test_cupti_library_starts_inside_ggprof_only(void) {
    char cupti[PATH_MAX], engine[PATH_MAX], ring_path[64];
    if (!lib_path(cupti, sizeof(cupti), "libggprof-cupti.so")) {
        printf("# no libggprof-cupti.so beside the test (built without CUDA): nothing to load\n");
        return;
    }
    CHECK(lib_path(engine, sizeof(engine), "libggprof.so"));
    /* Outside ggprof (no engine in the process, as when the variable is inherited by a program started some
     * other way): InitializeInjection succeeds, says nothing and loads nothing. A child process, since the
     * library starts once per process. */
    fflush(stdout);
    pid_t child = fork();
    if (child == 0) {
        void *h = dlopen(cupti, RTLD_NOW | RTLD_LOCAL);
        int (*init)(void) = h ? (int (*)(void)) dlsym(h, "InitializeInjection") : NULL;
        void *loaded = NULL;
        int ok = init && init() == 1;
        for (int v = 10; v < 20 && !loaded; v++) { /* libcupti stays unloaded */
            char so[32];
            snprintf(so, sizeof(so), "libcupti.so.%d", v);
            loaded = dlopen(so, RTLD_NOW | RTLD_NOLOAD);
        }
        _exit(ok && !loaded ? 0 : 1);
    }
    int status = -1;
    waitpid(child, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    void *h = dlopen(cupti, RTLD_NOW | RTLD_LOCAL);
    CHECK(h != NULL);
    if (!h) return;
    int (*init)(void) = (int (*)(void)) dlsym(h, "InitializeInjection");
    CHECK(init != NULL);
    if (!init) return;
    /* Inside: a ring, the engine loaded globally as LD_PRELOAD would, then the driver's call. Without a GPU,
     * CUPTI cannot trace: the library must say so in one note in the trace, and still return success. */
    snprintf(ring_path, sizeof(ring_path), "/tmp/ggprof-test-cupti-%d", (int) getpid());
    ggprof_ring ring;
    CHECK(ggprof_ring_create(&ring, ring_path, 4, 1 << 20, GGPROF_LEVEL_OP) == 0);
    setenv("GGPROF_RING", ring_path, 1);
    void *e = dlopen(engine, RTLD_NOW | RTLD_GLOBAL);
    CHECK(e != NULL);
    CHECK_EQ_INT(init(), 1);
    CHECK_EQ_INT(init(), 1); /* the driver may call it again (several cuInit): once is enough */
    notes_t n;
    memset(&n, 0, sizeof(n));
    ggprof_ring_drain(&ring, on_msg, &n);
    int cuda_notes = 0;
    for (int i = 0; i < n.n_notes; i++) {
        printf("# note: %s\n", n.text[i]);
        cuda_notes += strncmp(n.text[i], "cuda: ", 6) == 0;
    }
    CHECK_EQ_INT(cuda_notes, 1);
    ggprof_ring_unmap(&ring);
    unlink(ring_path);
}

int main(int argc, char **argv) {
    (void) argc;
    char exe[PATH_MAX];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    exe[len > 0 ? len : 0] = '\0';
    if (strrchr(exe, '/')) *strrchr(exe, '/') = '\0';
    snprintf(g_lib_dir, sizeof(g_lib_dir), "%s/../lib", len > 0 ? exe : ".");
    (void) argv;
    int failures = 0;
    RUN(test_best_sample_is_the_tightest_valid_one);
    RUN(test_offset_maps_device_to_host_across_wraparound);
    RUN(test_consistent_calibrations_keep_the_offset);
    RUN(test_drift_reanchors_and_is_measured);
    RUN(test_check_measures_how_far_outside);
    RUN(test_correlation_round_trip);
    RUN(test_correlation_reads_are_never_torn);
    RUN(test_cuda_direct_launches_keep_their_node);
    RUN(test_cuda_graph_replays_find_the_captured_node);
    RUN(test_graph_map_drops_keep_probe_chains_and_fill_stops);
    RUN(test_cupti_library_starts_inside_ggprof_only);
    return failures ? 1 : 0;
}
