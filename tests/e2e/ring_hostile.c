/* A workload that writes over ggprof's ring: it finds the mapping (GGPROF_RING names the file the engine maps),
 * computes graphs, waits until the collector has read them, then sets the header's n_slots and slot_cap and its
 * own slot's head and tail to huge values, computes more graphs and exits with status 7.
 * tests/e2e/ring_hostile.sh checks that record survives it, keeps what came before and says what it dropped. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "ggml.h"

/* The ring's layout as ggprof's schema/ring.h has it (version 6; the header and slot layout are those of 5): a workload does not include ggprof's headers. */
#define RING_HDR 4096
#define SLOT_HDR 256
#define OFF_N_SLOTS 12
#define OFF_SLOT_CAP 16
#define OFF_SLOT_PID 4
#define OFF_SLOT_HEAD 64
#define OFF_SLOT_TAIL 128

static ggml_backend_sched_t g_sched;
static struct ggml_cgraph  *g_graph;
static struct ggml_tensor  *g_x;

static void compute(int n) {
    float data[64] = { 1 };
    for (int i = 0; i < n; i++) {
        ggml_backend_tensor_set(g_x, data, 0, sizeof(data));
        ggml_backend_sched_graph_compute(g_sched, g_graph);
    }
}

/* A thread that computes one graph and ends: its slot is handed back, which wakes the collector to drain. */
static void *one_graph(void *arg) {
    (void) arg;
    compute(1);
    return NULL;
}

static volatile uint64_t *u64_at(char *base, size_t off) { return (volatile uint64_t *) (base + off); }

int main(void) {
    ggml_backend_t cpu = ggml_backend_cpu_init();
    if (!cpu) return fprintf(stderr, "ring_hostile: no CPU backend\n"), 1;
    ggml_backend_cpu_set_n_threads(cpu, 1);
    g_sched = ggml_backend_sched_new(&cpu, NULL, 1, GGML_DEFAULT_GRAPH_SIZE, false, true);
    struct ggml_init_params ip = { 8 * ggml_tensor_overhead() + ggml_graph_overhead(), NULL, true };
    struct ggml_context *ctx = ggml_init(ip);
    g_x = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 64);
    ggml_set_input(g_x);
    struct ggml_tensor *out = ggml_soft_max(ctx, ggml_scale(ctx, g_x, 0.5f));
    ggml_set_output(out);
    g_graph = ggml_new_graph(ctx);
    ggml_build_forward_expand(g_graph, out);
    if (!ggml_backend_sched_alloc_graph(g_sched, g_graph)) return fprintf(stderr, "ring_hostile: cannot allocate\n"), 1;

    const char *path = getenv("GGPROF_RING");
    if (!path) return fprintf(stderr, "ring_hostile: no GGPROF_RING\n"), 1;
    int fd = open(path, O_RDWR);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) return perror("ring_hostile: open"), 1;
    char *ring = mmap(NULL, (size_t) st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (ring == MAP_FAILED) return perror("ring_hostile: mmap"), 1;
    uint32_t n_slots;
    uint64_t cap;
    memcpy(&n_slots, ring + OFF_N_SLOTS, sizeof(n_slots));
    memcpy(&cap, ring + OFF_SLOT_CAP, sizeof(cap));

    compute(20);
    char *mine = NULL; /* the main thread's slot: the first claimed one of this process */
    for (uint32_t i = 0; i < n_slots && !mine; i++) {
        char *s = ring + RING_HDR + (size_t) i * (SLOT_HDR + cap);
        int32_t pid;
        memcpy(&pid, s + OFF_SLOT_PID, sizeof(pid));
        if (pid == (int32_t) getpid() && *u64_at(s, OFF_SLOT_HEAD) > 0) mine = s;
    }
    if (!mine) return fprintf(stderr, "ring_hostile: no slot of mine\n"), 1;
    /* Until the collector has read all of it (a thread that ends wakes it), at most 30 s. */
    pthread_t t;
    pthread_create(&t, NULL, one_graph, NULL);
    pthread_join(t, NULL);
    for (int i = 0; i < 3000 && *u64_at(mine, OFF_SLOT_TAIL) != *u64_at(mine, OFF_SLOT_HEAD); i++) {
        nanosleep(&(struct timespec){ 0, 10000000 }, NULL);
    }
    printf("drained before the damage: %s\n", *u64_at(mine, OFF_SLOT_TAIL) == *u64_at(mine, OFF_SLOT_HEAD) ? "yes" : "no");
    fflush(stdout);

    uint32_t huge_slots = 1u << 20;
    uint64_t huge_cap = 1ull << 40;
    memcpy(ring + OFF_N_SLOTS, &huge_slots, sizeof(huge_slots));
    memcpy(ring + OFF_SLOT_CAP, &huge_cap, sizeof(huge_cap));
    compute(5);
    *u64_at(mine, OFF_SLOT_HEAD) = 1ull << 40;
    compute(5);
    *u64_at(mine, OFF_SLOT_TAIL) = 1ull << 50;
    compute(5);
    return 7;
}
