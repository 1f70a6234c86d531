/* Puts a device clock on the host's CLOCK_MONOTONIC: calibration from bracketed samples, drift checks. */
#ifndef GGPROF_CLOCK_MAP_H
#define GGPROF_CLOCK_MAP_H

/* Header-only and free of any API: the OpenCL tracer (libggprof.so) and the CUPTI tracer (libggprof-cupti.so)
 * both use it, and tests/unit/test_device_trace.c tests it without a device. All arithmetic is modulo 2^64,
 * so a device clock may start anywhere (PoCL's and CUPTI's are both 64-bit nanoseconds of some epoch). */

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

/* The host clock every record is on. */
static inline uint64_t ggprof_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t) ts.tv_sec * 1000000000ull + (uint64_t) ts.tv_nsec;
}

/* One reading of the device clock taken between two host readings: the device moment lies in the bracket. */
typedef struct {
    uint64_t host_before, host_after, device;
} ggprof_clock_sample;

typedef struct {
    bool     valid;
    uint64_t offset;      /* host = device + offset (mod 2^64) */
    uint64_t uncertainty; /* half the bracket the adopted offset came from */
    uint64_t at_host;     /* when the adopted offset was measured */
    /* For the drift report: the first and the latest calibration, and what happened in between. */
    uint64_t first_host, first_offset, first_uncertainty, last_host, last_offset, last_uncertainty;
    uint32_t n_calibrations, n_reanchors;
    int64_t  max_step_ns;   /* largest offset change seen between two calibrations */
    /* Checks of the adopted offset against every bracketed device timestamp the producer sees (OpenCL:
     * each kernel's QUEUED stamp inside its clEnqueue call): how far outside the bracket it landed. */
    uint64_t n_checked, max_outside_ns;
} ggprof_clock_map;

static inline int64_t ggprof_clock_diff(uint64_t a, uint64_t b) { return (int64_t) (a - b); }

/* Index of the tightest valid bracket among n samples, -1 if none: a reading that took long (a preemption,
 * a lazy initialisation in the driver) says little about when the device clock was read. */
static inline int ggprof_clock_best(const ggprof_clock_sample *s, int n) {
    int best = -1;
    for (int i = 0; i < n; i++) {
        if (s[i].host_after < s[i].host_before) continue;
        if (best < 0 || s[i].host_after - s[i].host_before < s[best].host_after - s[best].host_before) best = i;
    }
    return best;
}

/* Takes a calibration. The first one is adopted. Later ones keep the adopted offset while both agree within
 * their uncertainties, so that the times of one queue or stream never step backwards for no reason; when they
 * disagree (the clocks drifted apart by more than the brackets can explain) the new offset is adopted and the
 * step is counted. Returns true when the offset changed. */
static inline bool ggprof_clock_calibrate(ggprof_clock_map *m, const ggprof_clock_sample *s) {
    uint64_t half = (s->host_after - s->host_before) / 2;
    uint64_t mid  = s->host_before + half;
    uint64_t off  = mid - s->device;
    m->last_host        = mid;
    m->last_offset      = off;
    m->last_uncertainty = half;
    m->n_calibrations++;
    if (!m->valid) {
        m->valid       = true;
        m->offset      = off;
        m->uncertainty = half;
        m->at_host     = mid;
        m->first_host  = mid;
        m->first_offset = off;
        m->first_uncertainty = half;
        return true;
    }
    int64_t  step = ggprof_clock_diff(off, m->offset);
    uint64_t mag  = step < 0 ? (uint64_t) -step : (uint64_t) step;
    if (mag > (uint64_t) (m->max_step_ns < 0 ? -m->max_step_ns : m->max_step_ns)) m->max_step_ns = step;
    if (mag <= m->uncertainty + half) return false;
    m->offset      = off;
    m->uncertainty = half;
    m->at_host     = mid;
    m->n_reanchors++;
    return true;
}

static inline uint64_t ggprof_clock_to_host(const ggprof_clock_map *m, uint64_t device) { return device + m->offset; }

/* Checks the adopted offset against one bracketed device timestamp; returns how far outside it fell (0: inside). */
static inline uint64_t ggprof_clock_check(ggprof_clock_map *m, const ggprof_clock_sample *s) {
    uint64_t h   = ggprof_clock_to_host(m, s->device);
    uint64_t out = 0;
    if (ggprof_clock_diff(h, s->host_before) < 0) out = s->host_before - h;
    if (ggprof_clock_diff(h, s->host_after) > 0) out = h - s->host_after;
    m->n_checked++;
    if (out > m->max_outside_ns) m->max_outside_ns = out;
    return out;
}

/* Drift between the first and the latest calibration, in parts per million of host time (0 with fewer than
 * two calibrations or none apart in time). */
static inline double ggprof_clock_drift_ppm(const ggprof_clock_map *m) {
    if (m->n_calibrations < 2 || m->last_host == m->first_host) return 0.0;
    return 1e6 * (double) ggprof_clock_diff(m->last_offset, m->first_offset) /
           (double) ggprof_clock_diff(m->last_host, m->first_host);
}

/* How much of that drift the brackets alone could explain: a drift smaller than this was not measured. */
static inline double ggprof_clock_drift_bound_ppm(const ggprof_clock_map *m) {
    if (m->n_calibrations < 2 || m->last_host == m->first_host) return 0.0;
    return 1e6 * (double) (m->first_uncertainty + m->last_uncertainty) /
           (double) ggprof_clock_diff(m->last_host, m->first_host);
}

#endif
