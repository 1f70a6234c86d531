/* late_ggml_inside: a program not linked with ggml (tests/e2e/late_ggml_inside.sh). A thread dlopen()s LIBA, which
 * carries ggml inside it, and computes GRAPHS graphs through it, on a new CPU backend every PER_BACKEND of them;
 * once AFTER of them are done, the main thread
 * dlopen()s LIBB, which calls into LIBA's ggml through its PLT: under ggprof that first call is where the engine
 * finds ggml inside LIBA and patches its entries, while the thread computes.
 * usage: late_ggml_inside LIBA LIBB GRAPHS PER_BACKEND THREADS AFTER
 * Prints each graph's output hash and "graphs: N" (stdout), and on stderr how many graphs were done when LIBB was
 * called and when its call returned ("probe: before B after A"). */
#define _POSIX_C_SOURCE 200809L
#include <dlfcn.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

typedef int (*compute_fn)(int graphs, int per_backend, int threads, uint64_t *sums, _Atomic int *done);

static struct {
    const char *liba;
    int         graphs, per_backend, threads, rc;
    uint64_t   *sums;
    _Atomic int done, loaded;
} job;

static void *computer(void *arg) {
    (void) arg;
    job.rc = 1;
    void *h = dlopen(job.liba, RTLD_NOW | RTLD_LOCAL);
    compute_fn compute = h ? (compute_fn) dlsym(h, "liba_compute") : NULL;
    if (!compute) fprintf(stderr, "late_ggml_inside: %s\n", dlerror());
    atomic_store(&job.loaded, compute ? 1 : -1);
    if (compute) job.rc = compute(job.graphs, job.per_backend, job.threads, job.sums, &job.done) == 0 ? 0 : 1;
    return NULL;
}

static int number(const char *s, int min, int max) {
    char *end;
    long  v = strtol(s, &end, 10);
    return *s && !*end && v >= min && v <= max ? (int) v : -1;
}

int main(int argc, char **argv) {
    bool args       = argc == 7;
    int  after      = args ? number(argv[6], 0, 100000) : -1;
    job.liba        = args ? argv[1] : NULL;
    job.graphs      = args ? number(argv[3], 1, 100000) : -1;
    job.per_backend = args ? number(argv[4], 1, 100000) : -1;
    job.threads     = args ? number(argv[5], 1, 64) : -1;
    if (job.graphs < 0 || job.per_backend < 0 || job.threads < 0 || after < 0 || after >= job.graphs) {
        fprintf(stderr, "usage: late_ggml_inside LIBA LIBB GRAPHS PER_BACKEND THREADS AFTER (AFTER < GRAPHS)\n");
        return 2;
    }
    job.sums = calloc((size_t) job.graphs, sizeof(uint64_t));
    pthread_t t;
    if (!job.sums || pthread_create(&t, NULL, computer, NULL) != 0) return 1;
    struct timespec tick = { 0, 100000 };
    while (atomic_load(&job.loaded) == 0 || (atomic_load(&job.loaded) > 0 && atomic_load(&job.done) < after)) {
        nanosleep(&tick, NULL);
    }
    int   rc = 0;
    void *hb = NULL;
    if (atomic_load(&job.loaded) > 0) {
        int before = atomic_load(&job.done);
        hb = dlopen(argv[2], RTLD_NOW | RTLD_LOCAL);
        int (*probe)(void) = hb ? (int (*)(void)) dlsym(hb, "libb_probe") : NULL;
        if (!probe || probe() != 0) {
            fprintf(stderr, "late_ggml_inside: %s\n", probe ? "libb_probe failed" : dlerror());
            rc = 1;
        }
        fprintf(stderr, "probe: before %d after %d\n", before, atomic_load(&job.done));
    }
    pthread_join(t, NULL);
    void (*release)(void) = hb ? (void (*)(void)) dlsym(hb, "libb_release") : NULL;
    if (release) release();
    for (int i = 0; i < atomic_load(&job.done); i++) printf("graph %d: %016" PRIx64 "\n", i, job.sums[i]);
    printf("graphs: %d\n", atomic_load(&job.done));
    free(job.sums);
    return rc ? rc : job.rc;
}
