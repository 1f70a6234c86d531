/* Progress of long work on stderr (importing, exporting, diffing, building a trace database): "ggprof: what 42%"
 * rewritten in place a few times a second, only when stderr is a terminal, only once the work has taken half a
 * second (short work prints nothing; GGPROF_PROGRESS_AFTER_MS sets another delay), and never after
 * ggprof_progress_quiet is set (-q). */
#ifndef GGPROF_PROGRESS_H
#define GGPROF_PROGRESS_H

#include <stdbool.h>
#include <stdint.h>

typedef struct {
    const char *what;
    uint64_t    total;
    uint64_t    start_ns, next_ns;
    unsigned    spins;
    bool        active, shown;
} ggprof_progress;

extern bool ggprof_progress_quiet;

/* total: the units the work will count to (bytes, rows); 0 when unknown (no percentage: a spinner). */
void ggprof_progress_start(ggprof_progress *p, const char *what, uint64_t total);
/* Cheap when nothing is due: call it as often as the work likes. */
void ggprof_progress_update(ggprof_progress *p, uint64_t done);
/* Clears the line, if one was shown. */
void ggprof_progress_end(ggprof_progress *p);

#endif
