/* Benchmark (not a test): what one 4 KiB message (a split's CPU ops) costs the producing thread on the first
 * lap of a ring slot, in time-stamp-counter cycles. Three slots of shared memory, written the same way:
 *   populated   MADV_POPULATE_WRITE only
 *   touched     populated, then one byte written to every page
 *   ring        a slot claimed through ggprof_ring_claim and written with ggprof_ring_write (what the engine does)
 * Under a hypervisor that backs guest memory lazily the first store to each page of a merely populated mapping
 * costs a host-side fault; the ring must cost what "touched" costs. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <x86intrin.h>

#include "ring.h"
#include "wire.h"

#define CAP (4u << 20)
#define MSG 4224u

static char *shm_map(const char *path) {
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    if (fd < 0 || ftruncate(fd, CAP) != 0) return NULL;
    char *p = mmap(NULL, CAP, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    unlink(path);
    return p == MAP_FAILED ? NULL : p;
}

static double lap(char *dst, const char *src) {
    unsigned long long t = 0;
    unsigned n = 0;
    for (unsigned pos = 0; pos + MSG <= CAP; pos += MSG, n++) {
        unsigned long long a = __rdtsc();
        memcpy(dst + pos, src, MSG);
        t += __rdtsc() - a;
    }
    return (double) t / n;
}

int main(int argc, char **argv) {
    const char *dir = argc > 1 ? argv[1] : "/dev/shm";
    char path[512];
    static char src[MSG] __attribute__((aligned(64)));
    memset(src, 1, sizeof(src));

    snprintf(path, sizeof(path), "%s/ggprof-bench-a", dir);
    char *a = shm_map(path);
    snprintf(path, sizeof(path), "%s/ggprof-bench-b", dir);
    char *b = shm_map(path);
    if (!a || !b) {
        fprintf(stderr, "ring_write: cannot map shared memory in %s\n", dir);
        return 2;
    }
    madvise(a, CAP, 23 /* MADV_POPULATE_WRITE */);
    madvise(b, CAP, 23);
    for (unsigned off = 0; off < CAP; off += 4096) ((volatile char *) b)[off] = 0;
    double populated = lap(a, src), touched = lap(b, src);

    snprintf(path, sizeof(path), "%s/ggprof-bench-ring", dir);
    ggprof_ring r = { 0 };
    if (ggprof_ring_create(&r, path, 1, CAP, 0) != 0) {
        fprintf(stderr, "ring_write: cannot create a ring in %s\n", dir);
        return 2;
    }
    unlink(path);
    ggprof_ring_slot *s = ggprof_ring_claim(&r, 1, 1);
    static union {
        ggprof_msg_hdr h;
        char           bytes[MSG];
    } m;
    m.h = (ggprof_msg_hdr){ MSG, GGPROF_MSG_CPU_OPS, 0 };
    unsigned long long t = 0;
    unsigned n = 0;
    for (; n < CAP / MSG - 1; n++) {
        unsigned long long c = __rdtsc();
        if (ggprof_ring_write(&r, s, &m.h) != 0) break;
        t += __rdtsc() - c;
    }
    double ring = n ? (double) t / n : 0;
    printf("first lap of a 4 MiB slot, %u-byte messages, TSC cycles per message:\n", MSG);
    printf("  populated only %.0f   pages touched %.0f   ggprof ring %.0f\n", populated, touched, ring);
    printf("ring / touched: %.2f (target <= 1.5)   populated only / touched: %.1f\n", ring / touched, populated / touched);
    return 0;
}
