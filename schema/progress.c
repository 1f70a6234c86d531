/* Progress on stderr (progress.h). */
#include "progress.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

bool ggprof_progress_quiet;

static uint64_t mono_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t) ts.tv_sec * 1000000000ull + (uint64_t) ts.tv_nsec;
}

void ggprof_progress_start(ggprof_progress *p, const char *what, uint64_t total) {
    p->what     = what;
    p->total    = total;
    p->shown    = false;
    p->active   = !ggprof_progress_quiet && isatty(STDERR_FILENO);
    p->start_ns = p->active ? mono_ns() : 0;
    /* Nothing for work shorter than half a second (GGPROF_PROGRESS_AFTER_MS: another delay, 0 in tests). */
    const char *after = getenv("GGPROF_PROGRESS_AFTER_MS");
    p->next_ns = p->start_ns + (after && *after ? strtoull(after, NULL, 10) : 500) * 1000000ull;
}

void ggprof_progress_update(ggprof_progress *p, uint64_t done) {
    if (!p->active) return;
    uint64_t now = mono_ns();
    if (now < p->next_ns) return;
    p->next_ns = now + 250000000ull;
    if (p->total) {
        double pct = 100.0 * (double) (done > p->total ? p->total : done) / (double) p->total;
        fprintf(stderr, "\rggprof: %s %3.0f%%", p->what, pct);
    } else { /* no end known: a spinner says the work goes on */
        (void) done;
        fprintf(stderr, "\rggprof: %s %c", p->what, "|/-\\"[p->spins++ & 3]);
    }
    p->shown = true;
}

void ggprof_progress_end(ggprof_progress *p) {
    if (p->shown) fprintf(stderr, "\r\033[K");
    p->active = p->shown = false;
}
