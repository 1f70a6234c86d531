/* Unit tests of record's /proc sampler (collector/proc_sample.c): its period backs off while no thread blocks or
 * wakes, to 100 ms while all are blocked and to 1 s while one runs, and comes back to the base period when one
 * blocks or wakes (a child blocks on a pipe, then spins; the sampler is
 * driven with made-up times, its intervals, over the child's real /proc files); and a blocked stretch's edges are
 * where the thread blocked and woke, not where the samples around them fell (real times, samples 150 and 160 ms
 * apart, the edges within a few ms of the child's own clock readings); the CPU idle and cgroup quota readings of
 * record's builder gate. */
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "proc_sample.h"
#include "store.h"
#include "trace_db.h"
#include "wire.h"

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

/* The state letter of a process or thread from /proc/ID/stat ('?' if unreadable). */
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

/* A child blocked (S) on a pipe until the parent writes into *go, then spinning, or exiting when exit_then. */
static pid_t blocked_child(int *go, bool exit_then) {
    int fds[2];
    if (pipe(fds) != 0) return -1;
    pid_t child = fork();
    if (child == 0) {
        char c;
        close(fds[1]);
        if (read(fds[0], &c, 1) != 1 || exit_then) _exit(0);
        for (volatile unsigned long spin = 0;; spin++) {}
    }
    close(fds[0]);
    *go = fds[1];
    return child;
}

static void back_off(void) {
    int   go;
    pid_t child = blocked_child(&go, false);
    CHECK(child > 0);
    CHECK(wait_state(child, "S")); /* the child has reached its read */
    uint64_t t = mono_ns();
    ggprof_proc_sampler *s = ggprof_proc_sampler_new(child, t, 5);
    CHECK(s != NULL);
    CHECK_EQ_INT(ggprof_proc_sampler_tick(s, t, false), 10);             /* the thread found: not a change */
    CHECK_EQ_INT(ggprof_proc_sampler_tick(s, t += 5 * MS, false), 5);     /* not due yet: nothing sampled */
    CHECK_EQ_INT(ggprof_proc_sampler_tick(s, t += 5 * MS, false), 5);     /* blocked for 10 ms: a change */
    CHECK_EQ_INT(ggprof_proc_sampler_tick(s, t += 5 * MS, false), 10);
    CHECK_EQ_INT(ggprof_proc_sampler_tick(s, t += 10 * MS, false), 20);
    CHECK_EQ_INT(ggprof_proc_sampler_tick(s, t += 20 * MS, false), 40);
    CHECK_EQ_INT(ggprof_proc_sampler_tick(s, t += 40 * MS, false), 80);
    CHECK_EQ_INT(ggprof_proc_sampler_tick(s, t += 80 * MS, false), 100);
    CHECK_EQ_INT(ggprof_proc_sampler_tick(s, t += 100 * MS, false), 100); /* all blocked: at most 20 base periods */
    CHECK_EQ_INT(ggprof_proc_sampler_tick(s, t += 1 * MS, false), 99);    /* not due yet: nothing sampled */
    /* The same blocked child, records arriving (graphs compute): the longest period at once, its blocking no reason
     * for the base period */
    uint64_t             tb = mono_ns();
    ggprof_proc_sampler *b  = ggprof_proc_sampler_new(child, tb, 5);
    CHECK(b != NULL);
    CHECK_EQ_INT(ggprof_proc_sampler_tick(b, tb, true), 100);
    CHECK_EQ_INT(ggprof_proc_sampler_tick(b, tb += 100 * MS, true), 100); /* blocked for 100 ms: no change */
    CHECK_EQ_INT(ggprof_proc_sampler_tick(b, tb += 100 * MS, false), 100); /* no records: backing off as before */
    ggprof_proc_sampler_free(b);
    /* Graphs that begin between two samples: the wake-up that finds them samples then, and the longest period
     * follows at once, not at the next sample due */
    uint64_t             tg = mono_ns();
    ggprof_proc_sampler *g  = ggprof_proc_sampler_new(child, tg, 5);
    CHECK(g != NULL);
    CHECK_EQ_INT(ggprof_proc_sampler_tick(g, tg, false), 10);
    CHECK_EQ_INT(ggprof_proc_sampler_tick(g, tg += 2 * MS, true), 100); /* not due, but graphs began: sampled */
    CHECK_EQ_INT(ggprof_proc_sampler_tick(g, tg += 1 * MS, true), 99);  /* still computing: nothing sampled */
    ggprof_proc_sampler_free(g);
    CHECK(write(go, "x", 1) == 1);
    CHECK(wait_state(child, "R")); /* the child spins */
    CHECK_EQ_INT(ggprof_proc_sampler_tick(s, t += 99 * MS, false), 5); /* running again: the base period */
    CHECK_EQ_INT(ggprof_proc_sampler_tick(s, t += 5 * MS, false), 10);
    CHECK_EQ_INT(ggprof_proc_sampler_tick(s, t += 10 * MS, false), 20);
    CHECK_EQ_INT(ggprof_proc_sampler_tick(s, t += 20 * MS, false), 40);
    CHECK_EQ_INT(ggprof_proc_sampler_tick(s, t += 40 * MS, false), 80);
    CHECK_EQ_INT(ggprof_proc_sampler_tick(s, t += 80 * MS, false), 160);
    CHECK_EQ_INT(ggprof_proc_sampler_tick(s, t += 160 * MS, false), 320);
    CHECK_EQ_INT(ggprof_proc_sampler_tick(s, t += 320 * MS, false), 640);
    CHECK_EQ_INT(ggprof_proc_sampler_tick(s, t += 640 * MS, false), 1000);
    CHECK_EQ_INT(ggprof_proc_sampler_tick(s, t += 1000 * MS, false), 1000); /* a thread runs: at most 200 */

    kill(child, SIGKILL);
    int status;
    waitpid(child, &status, 0);
    close(go);
    ggprof_proc_sampler_exit(s, t, status, NULL);
    ggprof_proc_sampler_free(s);
}

/* A child spins 40 ms, says when it blocks, blocks on a pipe until the parent writes, says when it woke, spins:
 * sampled before, 150 ms later (blocked by then) and 160 ms after that (running again), its one idle run starts
 * where it blocked and ends where it woke, though no sample fell near either. */
static void edges(void) {
    int go[2], said[2];
    CHECK(pipe(go) == 0 && pipe(said) == 0);
    pid_t child = fork();
    if (child == 0) {
        close(go[1]);
        close(said[0]);
        uint64_t t0 = mono_ns(), at;
        while (mono_ns() - t0 < 40 * MS) {}
        char c;
        at = mono_ns();
        if (write(said[1], &at, sizeof(at)) != sizeof(at) || read(go[0], &c, 1) != 1) _exit(1);
        at = mono_ns();
        if (write(said[1], &at, sizeof(at)) != sizeof(at)) _exit(1);
        for (volatile unsigned long spin = 0;; spin++) {}
    }
    close(go[0]);
    close(said[1]);
    uint64_t t = mono_ns(), blocked_at = 0, woke_at = 0;
    ggprof_proc_sampler *s = ggprof_proc_sampler_new(child, t, 5);
    CHECK(s != NULL);
    ggprof_proc_sampler_tick(s, mono_ns(), false);
    sleep_ms(150);
    CHECK(wait_state(child, "S"));
    ggprof_proc_sampler_tick(s, mono_ns(), false);
    CHECK(read(said[0], &blocked_at, sizeof(blocked_at)) == sizeof(blocked_at));
    sleep_ms(100);
    uint64_t woken_at = mono_ns(); /* from here the child is runnable; it notes woke_at once it runs */
    CHECK(write(go[1], "x", 1) == 1);
    CHECK(read(said[0], &woke_at, sizeof(woke_at)) == sizeof(woke_at));
    sleep_ms(60);
    ggprof_proc_sampler_tick(s, mono_ns(), false);
    kill(child, SIGKILL);
    int status;
    waitpid(child, &status, 0);
    ggprof_proc_sampler_exit(s, mono_ns(), status, NULL);

    ggprof_store *st = NULL;
    char why[256];
    CHECK(ggprof_store_create(&st, "", why, sizeof(why)) == 0);
    sqlite3 *db = st ? ggprof_store_finish(st, why, sizeof(why)) : NULL; /* as record stores it: on the finished trace */
    CHECK(db && ggprof_proc_sampler_store(s, db) == 0);
    sqlite3_stmt *q = NULL;
    int n = 0;
    int64_t start = 0, end = 0;
    if (db && sqlite3_prepare_v2(db, "SELECT start_ns, end_ns FROM thread_idle WHERE tid = ?", -1, &q, NULL) == SQLITE_OK) {
        sqlite3_bind_int(q, 1, child);
        while (sqlite3_step(q) == SQLITE_ROW) n++, start = sqlite3_column_int64(q, 0), end = sqlite3_column_int64(q, 1);
    }
    sqlite3_finalize(q);
    CHECK_EQ_INT(n, 1);
    /* The block: after the child noted blocked_at (10 ms for a preemption before its read), or up to a tick before
     * it: the sample before the block read the running child's schedstat CPU time, which the kernel brings up to
     * date at its ticks, so the stretch can start that much early (-4.4 ms seen under ASan beside two busy CPUs;
     * 10 ms allowed, a tick at HZ=100). The wake: once the parent wrote, by the time the child ran (time in the run
     * queue is not blocked). 2 ms for the clocks' reads, 18 more for the same lag of the CPU time (up to 13 ms late
     * seen on a loaded machine). Samples 150 and 160 ms apart: an edge at a sample is far outside. */
    double ds = (double) (start - (int64_t) blocked_at) / 1e6, de0 = (double) (end - (int64_t) woken_at) / 1e6;
    double de1 = (double) (end - (int64_t) woke_at) / 1e6;
    CHECK(ds >= -12 && ds <= 30);
    CHECK(de0 >= -2 && de1 <= 20);
    if (!(ds >= -12 && ds <= 30 && de0 >= -2 && de1 <= 20)) {
        fprintf(stderr, "  idle run: starts %.1f ms after the block, ends %.1f ms after the write, %.1f ms after the wake\n", ds, de0, de1);
    }
    sqlite3_close(db);
    ggprof_proc_sampler_free(s);
    close(go[1]);
    close(said[0]);
}


/* Waits for the child, tells the sampler of its end, and returns an empty store for the engine's messages (NULL,
 * counted as a failure, when it cannot be made). */
static ggprof_store *reaped(ggprof_proc_sampler *s, pid_t child) {
    int status = 0;
    waitpid(child, &status, 0);
    ggprof_proc_sampler_exit(s, mono_ns(), status, NULL);
    ggprof_store *st = NULL;
    char why[256];
    CHECK(ggprof_store_create(&st, "", why, sizeof(why)) == 0);
    return st;
}

/* The first column of the first row of sql: -1 without a row, -2 where it is NULL. */
static int64_t q_int(sqlite3 *db, const char *sql) {
    sqlite3_stmt *q = NULL;
    int64_t       v = -1;
    if (db && sqlite3_prepare_v2(db, sql, -1, &q, NULL) == SQLITE_OK && sqlite3_step(q) == SQLITE_ROW) {
        v = sqlite3_column_type(q, 0) == SQLITE_NULL ? -2 : sqlite3_column_int64(q, 0);
    }
    sqlite3_finalize(q);
    return v;
}

/* A workload that ends before the sampler's first sample (record at nice 19 on a CPU the workload keeps busy): the
 * CPUs it could use are known all the same, read as it was forked (its affinity is record's until it sets its own). */
static void never_sampled(void) {
    pid_t child = fork();
    if (child == 0) _exit(0);
    ggprof_proc_sampler *s = ggprof_proc_sampler_new(child, mono_ns(), 5);
    CHECK(s != NULL);
    ggprof_store *st = reaped(s, child); /* no tick: /proc has nothing of it now */
    char why[256];
    if (!st) return;
    sqlite3 *db = ggprof_store_finish(st, why, sizeof(why));
    CHECK(db && ggprof_proc_sampler_store(s, db) == 0);
    cpu_set_t mine;
    CHECK(sched_getaffinity(0, sizeof(mine), &mine) == 0);
    char sql[128];
    snprintf(sql, sizeof(sql), "SELECT n_cpus_allowed FROM processes_time WHERE pid = %d", (int) child);
    CHECK_EQ_INT(q_int(db, sql), CPU_COUNT(&mine)); /* NULL or no row: negative */
    sqlite3_close(db);
    ggprof_proc_sampler_free(s);
}

/* The CPU threads a plan asked for come as a number (the engine's CPU_PLAN message): the store keeps the most as meta
 * threads.PID where the message arrives, whatever order the slots drain in, and the sampler's processes_time row reads
 * it there; the engine's note for people stays as it was and is not read (a note with another number changes
 * nothing). */
static void cpu_threads(void) {
    pid_t child = fork();
    if (child == 0) {
        sleep_ms(2000);
        _exit(0);
    }
    ggprof_proc_sampler *s = ggprof_proc_sampler_new(child, mono_ns(), 5);
    CHECK(s != NULL);
    ggprof_proc_sampler_tick(s, mono_ns(), false);
    kill(child, SIGKILL);
    ggprof_store *st = reaped(s, child);
    char why[256];
    if (!st) return;
    ggprof_msg_cpu_plan plan = { { sizeof(plan), GGPROF_MSG_CPU_PLAN, 0 }, 3, 0 };
    ggprof_store_msg(st, child, child, &plan.h);
    plan.n_threads = 2; /* an earlier plan of another thread, drained later */
    ggprof_store_msg(st, child, child + 1, &plan.h);
    plan.n_threads = 7;
    ggprof_store_msg(st, child + 1, child + 1, &plan.h); /* another process */
    ggprof_msg_note note = { { sizeof(note), GGPROF_MSG_NOTE, 0 }, "CPU threads: 99" };
    ggprof_store_msg(st, child, child, &note.h);
    sqlite3 *db = ggprof_store_finish(st, why, sizeof(why));
    CHECK(db && ggprof_proc_sampler_store(s, db) == 0);
    sqlite3_stmt *q = NULL;
    int64_t n_threads = -1;
    if (db && sqlite3_prepare_v2(db, "SELECT n_threads FROM processes_time WHERE pid = ?", -1, &q, NULL) == SQLITE_OK) {
        sqlite3_bind_int(q, 1, child);
        if (sqlite3_step(q) == SQLITE_ROW) n_threads = sqlite3_column_int64(q, 0);
    }
    sqlite3_finalize(q);
    CHECK_EQ_INT(n_threads, 3);
    CHECK_EQ_INT(db ? ggprof_db_cpu_threads(db, child) : -2, 3);
    CHECK_EQ_INT(db ? ggprof_db_cpu_threads(db, child + 1) : -2, 7);
    CHECK_EQ_INT(db ? ggprof_db_cpu_threads(db, child + 2) : -2, -1); /* none sent: unknown */
    int notes = 0;
    if (db && sqlite3_prepare_v2(db, "SELECT count(*) FROM notes WHERE pid = ? AND text = 'CPU threads: 99'", -1, &q,
                                 NULL) == SQLITE_OK) {
        sqlite3_bind_int(q, 1, child);
        if (sqlite3_step(q) == SQLITE_ROW) notes = sqlite3_column_int(q, 0);
    }
    sqlite3_finalize(q);
    CHECK_EQ_INT(notes, 1);
    sqlite3_close(db);
    ggprof_proc_sampler_free(s);
}

/* A sampler that read the blocked child once, then saw it exit. */
static ggprof_proc_sampler *sampled_once(uint64_t *fork_ns, uint64_t *sampled, pid_t *pid) {
    int   go;
    pid_t child = blocked_child(&go, true);
    CHECK(child > 0);
    *fork_ns = mono_ns();
    ggprof_proc_sampler *s = ggprof_proc_sampler_new(child, *fork_ns, 5);
    CHECK(s != NULL && wait_state(child, "S"));
    ggprof_proc_sampler_tick(s, mono_ns(), false);
    *sampled = mono_ns();
    CHECK(write(go, "x", 1) == 1);
    int status = 0;
    waitpid(child, &status, 0);
    close(go);
    ggprof_proc_sampler_exit(s, mono_ns(), status, NULL);
    *pid = child;
    return s;
}

/* The engine's counters at a thread's end (THREAD_END) make thread_stats exact however seldom the sampler read them:
 * a sampled thread takes the latest reading (an older one drained later changes nothing), a thread the sampler never
 * saw gets a row of its own with its start and no idle time (not followed: NULL), a process the sampler does not
 * know gets none, and a reading older than the sampler's last sample is not taken. */
static void thread_ends(void) {
    uint64_t fork_ns, sampled;
    pid_t    child;
    ggprof_proc_sampler *s = sampled_once(&fork_ns, &sampled, &child);
    ggprof_store *st = NULL;
    char why[256];
    CHECK(ggprof_store_create(&st, "", why, sizeof(why)) == 0);
    if (!st) return;
    ggprof_msg_thread_end e = { { sizeof(e), GGPROF_MSG_THREAD_END, 0 }, child, 0, fork_ns, sampled + 50 * MS,
                                123456789, 1000, 42, "main" };
    ggprof_store_msg(st, child, child, &e.h);
    ggprof_msg_thread_end old = e;
    old.at_ns = sampled + 10 * MS, old.cpu_ns = 5; /* drained later, read earlier */
    ggprof_store_msg(st, child, child, &old.h);
    ggprof_msg_thread_end w = { { sizeof(w), GGPROF_MSG_THREAD_END, 0 }, 999999, 0, fork_ns + 1 * MS,
                                fork_ns + 30 * MS, 7000000, 2000000, 9, "worker" };
    ggprof_store_msg(st, child, child, &w.h); /* the main thread reports another at the exit */
    ggprof_store_msg(st, child + 1, child + 1, &w.h); /* a process the sampler does not know */
    ggprof_msg_thread_end shortm = w;
    shortm.h.size = 64; /* shorter than the kind: skipped */
    shortm.tid = 999998;
    ggprof_store_msg(st, child, child, &shortm.h);
    sqlite3 *db = ggprof_store_finish(st, why, sizeof(why));
    CHECK(db && ggprof_proc_sampler_store(s, db) == 0);
    char sql[512];
    snprintf(sql, sizeof(sql), "SELECT cpu_ns = 123456789 AND runq_ns = 1000 AND timeslices = 42 AND last_ns = %llu"
             " AND idle_ns IS NOT NULL FROM thread_stats WHERE pid = %d AND tid = %d",
             (unsigned long long) (sampled + 50 * MS), (int) child, (int) child);
    CHECK_EQ_INT(q_int(db, sql), 1);
    snprintf(sql, sizeof(sql), "SELECT (name = 'worker') + (first_ns = %llu) + (last_ns = %llu) + (cpu_ns = 7000000)"
             " + (runq_ns = 2000000) + (timeslices = 9) + (idle_ns IS NULL) FROM thread_stats WHERE pid = %d AND"
             " tid = 999999", (unsigned long long) (fork_ns + 1 * MS), (unsigned long long) (fork_ns + 30 * MS), (int) child);
    CHECK_EQ_INT(q_int(db, sql), 7);
    CHECK_EQ_INT(q_int(db, "SELECT count(*) FROM thread_stats WHERE tid = 999998"), 0);
    snprintf(sql, sizeof(sql), "SELECT count(*) FROM thread_stats WHERE pid = %d", (int) child + 1);
    CHECK_EQ_INT(q_int(db, sql), 0);
    snprintf(sql, sizeof(sql), "SELECT count(*) FROM thread_stats WHERE pid = %d", (int) child);
    CHECK_EQ_INT(q_int(db, sql), 2);
    sqlite3_close(db);
    ggprof_proc_sampler_free(s);

    /* A reading taken before the sampler's last sample: older counters, not taken */
    s = sampled_once(&fork_ns, &sampled, &child);
    CHECK(ggprof_store_create(&st, "", why, sizeof(why)) == 0);
    if (!st) return;
    e.tid = child, e.at_ns = fork_ns - 1, e.cpu_ns = 123456789;
    ggprof_store_msg(st, child, child, &e.h);
    db = ggprof_store_finish(st, why, sizeof(why));
    CHECK(db && ggprof_proc_sampler_store(s, db) == 0);
    snprintf(sql, sizeof(sql), "SELECT count(*) FROM thread_stats WHERE pid = %d AND tid = %d AND cpu_ns != 123456789"
             " AND last_ns >= %llu", (int) child, (int) child, (unsigned long long) fork_ns);
    CHECK_EQ_INT(q_int(db, sql), 1);
    sqlite3_close(db);
    ggprof_proc_sampler_free(s);
}

/* What followed()'s thread reports of itself: its tid first, then its counters as it ends. */
typedef struct {
    int ack; /* read end: the parent's word to go on */
    int out; /* write end */
} follow_pipes;
static void *sleepy_thread(void *arg) {
    follow_pipes *fp  = arg;
    int32_t       tid = (int32_t) syscall(SYS_gettid);
    char          c;
    if (write(fp->out, &tid, sizeof(tid)) != sizeof(tid) || read(fp->ack, &c, 1) != 1) return NULL;
    sleep_ms(120);
    FILE *f = fopen("/proc/thread-self/schedstat", "r");
    unsigned long long v[3] = { 0, 0, 0 };
    if (f) {
        if (fscanf(f, "%llu %llu %llu", &v[0], &v[1], &v[2]) != 3) v[0] = v[1] = v[2] = 0;
        fclose(f);
    }
    uint64_t end[4] = { mono_ns(), v[0], v[1], v[2] };
    if (write(fp->out, end, sizeof(end)) != sizeof(end)) return NULL;
    return NULL;
}

/* A thread that begins to record while graphs compute (the sampler reads at its longest period and lists no
 * threads) is followed from its first record (ggprof_proc_sampler_follow, as record calls it on the ring's new
 * owner) while blocked; it blocks 120 ms more and ends between two samples, and the engine's reading at its end
 * closes its run: a kept thread with an idle figure of its runs, the run inside its life, and at least the 120 ms it
 * slept. Before, such a thread was never followed (idle NULL). */
static void followed(void) {
    int go[2], ack[2], out[2];
    CHECK(pipe(go) == 0 && pipe(ack) == 0 && pipe(out) == 0);
    pid_t child = fork();
    if (child == 0) {
        char         c;
        follow_pipes fp = { ack[0], out[1] };
        pthread_t    th;
        if (read(go[0], &c, 1) != 1 || pthread_create(&th, NULL, sleepy_thread, &fp) != 0) _exit(1);
        pthread_join(th, NULL);
        if (read(go[0], &c, 1) != 1) _exit(1); /* blocked until the parent is done */
        _exit(0);
    }
    CHECK(child > 0 && wait_state(child, "S"));
    uint64_t fork_ns = mono_ns();
    ggprof_proc_sampler *s = ggprof_proc_sampler_new(child, fork_ns, 5);
    CHECK(s != NULL);
    CHECK(ggprof_proc_sampler_tick(s, mono_ns(), true) >= 100); /* records arrive: the longest period */
    CHECK(write(go[1], "x", 1) == 1);
    int32_t tid = 0;
    CHECK(read(out[0], &tid, sizeof(tid)) == sizeof(tid) && tid > 0);
    /* blocked on its read when followed: a first reading that finds it still running (a loaded machine) begins no
     * run, and a thread that blocks and wakes between two readings is not claimed blocked (thread_advance) */
    CHECK(wait_state(tid, "S"));
    uint64_t followed_ns = mono_ns();
    ggprof_proc_sampler_follow(s, child, tid, followed_ns);
    ggprof_proc_sampler_follow(s, child, tid, mono_ns()); /* told twice: one thread */
    ggprof_proc_sampler_follow(s, child + 1, 5, mono_ns()); /* a process it does not know: nothing */
    CHECK(write(ack[1], "x", 1) == 1);
    uint64_t end[4] = { 0 };
    CHECK(read(out[0], end, sizeof(end)) == sizeof(end) && end[0] > followed_ns);
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/task/%d", (int) child, (int) tid);
    for (int i = 0; i < 1000 && access(path, F_OK) == 0; i++) sleep_ms(1); /* it has ended */
    CHECK(write(go[1], "x", 1) == 1);
    ggprof_store *st = reaped(s, child);
    char why[256];
    if (!st) return;
    ggprof_msg_event ev;
    memset(&ev, 0, sizeof(ev));
    ggprof_store_event(st, child, tid, &ev, "x", NULL); /* it recorded: a ggml thread */
    ggprof_msg_thread_end e = { { sizeof(e), GGPROF_MSG_THREAD_END, 0 }, tid, 0, followed_ns, end[0], end[1], end[2],
                                end[3], "sleepy" };
    ggprof_store_msg(st, child, tid, &e.h);
    sqlite3 *db = ggprof_store_finish(st, why, sizeof(why));
    CHECK(db && ggprof_proc_sampler_store(s, db) == 0);
    char sql[512];
    snprintf(sql, sizeof(sql), "SELECT count(*) FROM thread_stats WHERE pid = %d AND tid = %d", (int) child, (int) tid);
    CHECK_EQ_INT(q_int(db, sql), 1);
    snprintf(sql, sizeof(sql), "SELECT idle_ns >= 120000000 AND idle_ns = (SELECT sum(end_ns - start_ns) FROM"
             " thread_idle i WHERE i.pid = s.pid AND i.tid = s.tid) AND last_ns = %llu FROM thread_stats s WHERE"
             " pid = %d AND tid = %d", (unsigned long long) end[0], (int) child, (int) tid);
    CHECK_EQ_INT(q_int(db, sql), 1);
    snprintf(sql, sizeof(sql), "SELECT count(*) FROM thread_idle WHERE pid = %d AND tid = %d AND start_ns >= %llu AND"
             " end_ns <= %llu", (int) child, (int) tid, (unsigned long long) followed_ns, (unsigned long long) end[0]);
    CHECK_EQ_INT(q_int(db, sql), 1);
    sqlite3_close(db);
    ggprof_proc_sampler_free(s);
    for (int i = 0; i < 2; i++) close(go[i]), close(ack[i]), close(out[i]);
}

/* The idle CPUs between two readings of /proc/stat over a set of CPUs (record's builder waits while under half of
 * one is idle): made-up texts with the lines of two kernels (4 and 10 fields), a set that leaves a CPU out,
 * malformed lines, and the real file twice. */
static void cpu_idle(void) {
    const char *two = "cpu  300 5 50 1100 20 3 2 1 0 0\ncpu0 100 5 50 1000 20 3 2 1 0 0\n"
                      "cpu1 200 0 0 100 0 0 0 0 0 0\nintr 1 2 3 4\nctxt 99\n";
    uint64_t busy = 0, idle = 0;
    int n = 0;
    CHECK(ggprof_stat_cpu_parse(two, NULL, &busy, &idle, &n));
    CHECK(busy == 361 && idle == 1120 && n == 2); /* user nice system irq softirq steal; guest time is in user already */
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(1, &one);
    CHECK(ggprof_stat_cpu_parse(two, &one, &busy, &idle, &n) && busy == 200 && idle == 100 && n == 1);
    CHECK(ggprof_stat_cpu_parse("cpu  10 0 5 85\ncpu0 10 0 5 85\n", NULL, &busy, &idle, &n) && busy == 15 && idle == 85);
    CPU_ZERO(&one);
    CPU_SET(7, &one);
    CHECK(!ggprof_stat_cpu_parse(two, &one, &busy, &idle, &n)); /* none of its CPUs there */
    CHECK(!ggprof_stat_cpu_parse("cpu  10 0 5\ncpu0 10 0 5\n", NULL, &busy, &idle, &n));
    CHECK(!ggprof_stat_cpu_parse("cpu0x 1 2 3 4\n", NULL, &busy, &idle, &n));
    CHECK(!ggprof_stat_cpu_parse("intr 1 2 3 4\n", NULL, &busy, &idle, &n));

    ggprof_cpu_idle c = { 0 };
    CHECK(ggprof_cpu_idle_update(&c, "cpu0 50 0 0 50\ncpu1 50 0 0 50\n", NULL) < 0); /* nothing before it */
    /* 2 CPUs, 100 ticks each since: one busy, one idle */
    double d = ggprof_cpu_idle_update(&c, "cpu0 150 0 0 50\ncpu1 50 0 0 150\n", NULL);
    CHECK(d > 0.99 && d < 1.01);
    /* both busy (steal counts as busy): none idle */
    d = ggprof_cpu_idle_update(&c, "cpu0 250 0 0 50\ncpu1 50 0 50 150 0 0 0 50\n", NULL);
    CHECK(d >= 0 && d < 0.01);
    CHECK(ggprof_cpu_idle_update(&c, "cpu0 251 0 0 50\ncpu1 50 0 50 150 0 0 0 50\n", NULL) < 0); /* too short */
    d = ggprof_cpu_idle_update(&c, "cpu0 251 0 0 52\ncpu1 50 0 50 152 0 0 0 50\n", NULL); /* from the kept one */
    CHECK(d > 1.59 && d < 1.61);
    /* only CPU 1 counts: it was idle all along while CPU 0 was busy */
    CPU_ZERO(&one);
    CPU_SET(1, &one);
    ggprof_cpu_idle c1 = { 0 };
    ggprof_cpu_idle_update(&c1, "cpu0 0 0 0 0\ncpu1 0 0 0 0\n", &one);
    d = ggprof_cpu_idle_update(&c1, "cpu0 100 0 0 0\ncpu1 0 0 0 100\n", &one);
    CHECK(d > 0.99 && d < 1.01);
    CHECK(ggprof_cpu_idle_update(&c, "garbage", NULL) < 0);
    CHECK(ggprof_cpu_idle_update(&c, "cpu0 1 0 0 1\ncpu1 1 0 0 1\n", NULL) < 0); /* counters went back: a new start */
    CHECK(c.busy == 2 && c.idle == 2);

    char buf[65536];
    long r = ggprof_read_small("/proc/stat", buf, sizeof(buf));
    CHECK(r > 0 && ggprof_stat_cpu_parse(buf, NULL, &busy, &idle, &n) && busy + idle > 0 && n >= 1);
}

/* Writes text into root/rel (its folders made). */
static void put(const char *root, const char *rel, const char *text) {
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", root, rel);
    for (char *s = strchr(path + strlen(root) + 1, '/'); s; s = strchr(s + 1, '/')) {
        *s = 0;
        mkdir(path, 0700);
        *s = '/';
    }
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (f) fputs(text, f), fclose(f);
}

/* The tightest quota over a cgroup and its ancestors, in a made-up cgroup file system: v2, v1 (cpu beside cpuacct,
 * or mounted together), both at once (a hybrid host), and texts that must not be followed. */
static void cgroup_quota(void) {
    char root[] = "/tmp/ggprof-cgroup-XXXXXX";
    CHECK(mkdtemp(root) != NULL);
    ggprof_cgroup_cpu c;
    char want[512];
    /* v2: the quota of an ancestor is tighter than its child's; "max" is none */
    put(root, "a/cpu.max", "150000 100000\n");
    put(root, "a/b/cpu.max", "400000 100000\n");
    put(root, "a/b/c/cpu.max", "max 100000\n");
    ggprof_cgroup_cpu_find_in("0::/a/b/c\n", root, &c);
    snprintf(want, sizeof(want), "%s/a/cpu.stat", root);
    CHECK(c.quota > 1.49 && c.quota < 1.51 && c.v2 && strcmp(c.usage, want) == 0);
    ggprof_cgroup_cpu_find_in("0::/a/b/c/\n", root, &c); /* a trailing slash */
    CHECK(c.quota > 1.49 && c.quota < 1.51);
    ggprof_cgroup_cpu_find_in("0::/\n", root, &c); /* the root: no quota */
    CHECK(c.quota < 0 && c.usage[0] == 0);
    ggprof_cgroup_cpu_find_in("0::/a/../a/b\n", root, &c); /* climbing: not followed */
    CHECK(c.quota < 0);
    ggprof_cgroup_cpu_find_in("0::a/b\n", root, &c); /* relative: not followed */
    CHECK(c.quota < 0);
    /* v1: the cpu controller's quota, cpuacct's usage at the same path; a half CPU */
    put(root, "cpu/docker/x/cpu.cfs_quota_us", "50000\n");
    put(root, "cpu/docker/x/cpu.cfs_period_us", "100000\n");
    put(root, "cpu/docker/cpu.cfs_quota_us", "-1\n");
    put(root, "cpu/docker/cpu.cfs_period_us", "100000\n");
    mkdir(strcat(strcpy(want, root), "/cpuacct"), 0700);
    const char *v1 = "12:pids:/docker/x\n4:cpuacct:/docker/x\n3:cpu:/docker/x\n1:name=systemd:/docker/x\n0::/\n";
    ggprof_cgroup_cpu_find_in(v1, root, &c);
    snprintf(want, sizeof(want), "%s/cpuacct/docker/x/cpuacct.usage", root);
    CHECK(c.quota > 0.49 && c.quota < 0.51 && !c.v2 && strcmp(c.usage, want) == 0);
    /* cpuacct's cgroup elsewhere: the quota is known, its use is not */
    ggprof_cgroup_cpu_find_in("4:cpuacct:/\n3:cpu:/docker/x\n", root, &c);
    CHECK(c.quota > 0.49 && c.quota < 0.51 && c.usage[0] == 0);
    /* a controller named only within another's name is not it ("cpuset" is not "cpu") */
    ggprof_cgroup_cpu_find_in("5:cpuset:/docker/x\n", root, &c);
    CHECK(c.quota < 0);
    /* a hybrid host: v2 and v1 at once; the tighter wins (v2's 1.5 against v1's 0.5) */
    ggprof_cgroup_cpu_find_in("4:cpuacct:/docker/x\n3:cpu:/docker/x\n0::/a/b\n", root, &c);
    CHECK(c.quota > 0.49 && c.quota < 0.51 && !c.v2);
    /* inside a container's cgroup namespace its own cgroup is the root ("0::/"): its cpu.max is the container's */
    put(root, "cpu.max", "200000 100000\n");
    ggprof_cgroup_cpu_find_in("0::/\n", root, &c);
    snprintf(want, sizeof(want), "%s/cpu.stat", root);
    CHECK(c.quota > 1.99 && c.quota < 2.01 && c.v2 && strcmp(c.usage, want) == 0);
    ggprof_cgroup_cpu_find_in("0::/a/b/c\n", root, &c); /* still a's, the tighter */
    CHECK(c.quota > 1.49 && c.quota < 1.51);
    /* the usage files' texts */
    uint64_t ns = 0;
    CHECK(ggprof_cgroup_usage_parse("usage_usec 1234\nuser_usec 1000\nsystem_usec 234\n", true, &ns) && ns == 1234000);
    CHECK(ggprof_cgroup_usage_parse("nr_periods 3\nusage_usec 7\n", true, &ns) && ns == 7000);
    CHECK(!ggprof_cgroup_usage_parse("user_usec 1000\n", true, &ns));
    CHECK(!ggprof_cgroup_usage_parse("usage_usec x\n", true, &ns));
    CHECK(!ggprof_cgroup_usage_parse("usage_usec 99999999999999999999\n", true, &ns));
    CHECK(ggprof_cgroup_usage_parse("2037382894\n", false, &ns) && ns == 2037382894ull);
    CHECK(!ggprof_cgroup_usage_parse("", false, &ns) && !ggprof_cgroup_usage_parse("12 ns\n", false, &ns));
    char cmd[600];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
    CHECK(system(cmd) == 0);
}

int main(void) {
    int failures = 0;
    RUN(cpu_idle);
    RUN(cgroup_quota);
    RUN(back_off);
    RUN(edges);
    RUN(cpu_threads);
    RUN(never_sampled);
    RUN(thread_ends);
    RUN(followed);
    return failures ? 1 : 0;
}
