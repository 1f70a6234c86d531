/* Benchmark helper (not a test): what one read of the engine's clocks costs on this machine, the floor under
 * node_cost.sh's figure (the engine reads ggprof_stamp() at every tick, and after every barrier between nodes where
 * more than one thread computes). Prints the median over 5 rounds of 10 million reads each, back to back.
 * usage: clock_cost */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>

#include "clock_map.h" /* ggprof_now_ns: CLOCK_MONOTONIC, as every record's clock */
#include "timing.h"

static int cmp(const void *a, const void *b) {
    double x = *(const double *) a, y = *(const double *) b;
    return (x > y) - (x < y);
}

int main(void) {
    enum { N = 10000000, ROUNDS = 5 };
    double           stamp[ROUNDS], mono[ROUNDS];
    volatile uint64_t sink = 0;
    for (int r = 0; r < ROUNDS; r++) {
        uint64_t a = ggprof_now_ns();
        for (int i = 0; i < N; i++) sink += ggprof_stamp();
        uint64_t b = ggprof_now_ns();
        for (int i = 0; i < N / 10; i++) sink += ggprof_now_ns();
        uint64_t c = ggprof_now_ns();
        stamp[r] = (double) (b - a) / N;
        mono[r]  = (double) (c - b) / (N / 10);
    }
    qsort(stamp, ROUNDS, sizeof(double), cmp);
    qsort(mono, ROUNDS, sizeof(double), cmp);
    printf("clock: one ggprof_stamp() %.1f ns, one clock_gettime(CLOCK_MONOTONIC) %.1f ns (medians of %d rounds)\n",
           stamp[ROUNDS / 2], mono[ROUNDS / 2], ROUNDS);
    return (int) (sink & 0);
}
