/* Benchmark helper (not a test): what one read of the engine's clocks costs on this machine, the floor under
 * node_cost.sh's figure (the engine reads ggprof_stamp() at every tick, and after every barrier between nodes where
 * more than one thread computes). Prints the median over 5 rounds of 10 million reads each, back to back.
 * usage: clock_cost */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "timing.h"

static double now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *) a, y = *(const double *) b;
    return (x > y) - (x < y);
}

int main(void) {
    enum { N = 10000000, ROUNDS = 5 };
    double           stamp[ROUNDS], mono[ROUNDS];
    volatile uint64_t sink = 0;
    for (int r = 0; r < ROUNDS; r++) {
        double a = now_ns();
        for (int i = 0; i < N; i++) sink += ggprof_stamp();
        double b = now_ns();
        for (int i = 0; i < N / 10; i++) {
            struct timespec t;
            clock_gettime(CLOCK_MONOTONIC, &t);
            sink += (uint64_t) t.tv_nsec;
        }
        double c = now_ns();
        stamp[r] = (b - a) / N;
        mono[r]  = (c - b) / (N / 10);
    }
    qsort(stamp, ROUNDS, sizeof(double), cmp);
    qsort(mono, ROUNDS, sizeof(double), cmp);
    printf("clock: one ggprof_stamp() %.1f ns, one clock_gettime(CLOCK_MONOTONIC) %.1f ns (medians of %d rounds)\n",
           stamp[ROUNDS / 2], mono[ROUNDS / 2], ROUNDS);
    return (int) (sink & 0);
}
