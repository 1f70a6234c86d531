/* A tiny test harness: CHECK records a failure and carries on; each test binary reports TAP-style lines
 * ("ok - NAME", "not ok - NAME: why") that tests/run.sh counts. */
#ifndef GGPROF_HARNESS_H
#define GGPROF_HARNESS_H

#include <stdio.h>

static int h_failed_checks;

#define CHECK(cond)                                                                                            \
    do {                                                                                                       \
        if (!(cond)) {                                                                                         \
            h_failed_checks++;                                                                                 \
            fprintf(stderr, "  %s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #cond);                         \
        }                                                                                                      \
    } while (0)

#define CHECK_EQ_INT(a, b)                                                                                     \
    do {                                                                                                       \
        long long _a = (long long) (a), _b = (long long) (b);                                                  \
        if (_a != _b) {                                                                                        \
            h_failed_checks++;                                                                                 \
            fprintf(stderr, "  %s:%d: %s == %lld, expected %s == %lld\n", __FILE__, __LINE__, #a, _a, #b, _b); \
        }                                                                                                      \
    } while (0)

static int h_run(const char *name, void (*fn)(void)) {
    int before = h_failed_checks;
    fn();
    int bad = h_failed_checks != before;
    printf("%s - %s\n", bad ? "not ok" : "ok", name);
    fflush(stdout);
    return bad;
}

#define RUN(fn) failures += h_run(#fn, fn)

#endif
