/* Unit tests of record's /proc sampler (collector/proc_sample.c): its period backs off while no thread changes
 * state, and comes back to the base period when one does. A child blocks on a pipe, then spins; the sampler is
 * driven with made-up times (its intervals) over the child's real /proc files. */
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "proc_sample.h"

#define MS 1000000ull

static uint64_t mono_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t) ts.tv_sec * 1000000000ull + (uint64_t) ts.tv_nsec;
}

static void sleep_ms(long ms) {
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };
    nanosleep(&ts, NULL);
}

/* The process's state letter from /proc/PID/stat ('?' if unreadable). */
static char state_of(pid_t pid) {
    char path[64], buf[512];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int) pid);
    FILE *f = fopen(path, "r");
    if (!f) return '?';
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = 0;
    const char *r = strrchr(buf, ')');
    return r && r[1] == ' ' ? r[2] : '?';
}

/* Waits (up to 10 s) until pid is in one of the states. */
static bool wait_state(pid_t pid, const char *states) {
    for (int i = 0; i < 1000; i++, sleep_ms(10)) {
        if (strchr(states, state_of(pid))) return true;
    }
    return false;
}

static void back_off(void) {
    int go[2];
    CHECK(pipe(go) == 0);
    pid_t child = fork();
    if (child == 0) {
        char c;
        close(go[1]);
        if (read(go[0], &c, 1) != 1) _exit(1); /* blocked (S) until the parent writes */
        for (volatile unsigned long spin = 0;; spin++) {}
    }
    close(go[0]);
    CHECK(wait_state(child, "S")); /* the child has reached its read */
    uint64_t t = mono_ns();
    ggprof_proc_sampler *s = ggprof_proc_sampler_new(child, t, 5);
    CHECK(s != NULL);
    CHECK_EQ_INT(ggprof_proc_sampler_tick(s, t), 5);          /* the thread found */
    CHECK_EQ_INT(ggprof_proc_sampler_tick(s, t += 5 * MS), 5); /* blocked: a change */
    CHECK_EQ_INT(ggprof_proc_sampler_tick(s, t += 5 * MS), 10);
    CHECK_EQ_INT(ggprof_proc_sampler_tick(s, t += 10 * MS), 20);
    CHECK_EQ_INT(ggprof_proc_sampler_tick(s, t += 20 * MS), 20); /* at most 4 base periods */
    CHECK_EQ_INT(ggprof_proc_sampler_tick(s, t += 1 * MS), 19);  /* not due yet: nothing sampled */
    CHECK(write(go[1], "x", 1) == 1);
    CHECK(wait_state(child, "R")); /* the child spins */
    CHECK_EQ_INT(ggprof_proc_sampler_tick(s, t += 19 * MS), 5); /* running again: the base period */
    CHECK_EQ_INT(ggprof_proc_sampler_tick(s, t += 5 * MS), 10);
    kill(child, SIGKILL);
    int status;
    waitpid(child, &status, 0);
    close(go[1]);
    ggprof_proc_sampler_exit(s, t, status, NULL);
    ggprof_proc_sampler_free(s);
}

int main(void) {
    int failures = 0;
    RUN(back_off);
    return failures ? 1 : 0;
}
