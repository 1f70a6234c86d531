/* Keeping the program's other threads out while code they may run is rewritten (stop_threads.h; docs/how-it-works.md,
 * "Patching a running program"). Every other thread of /proc/self/task gets a private real-time signal whose handler
 * reports the thread's PC and parks it on a futex until the release; a parked thread given a new PC goes on there. A
 * thread that blocks the signal is let be only while it sleeps in the kernel (/proc/self/task/TID/syscall); one that
 * neither parks nor sleeps within STOP_WAIT_NS refuses the stop. Between the first signal and the release the stopping
 * thread calls nothing that could take a lock a parked thread holds (no malloc, no stdio): raw system calls only. */
#include "stop_threads.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>
#include <linux/futex.h>

#if defined(__x86_64__)
#define STOP_MAX     1024
#define STOP_WAIT_NS 500000000L /* 0.5 s for every thread to park */

enum { T_WAIT, T_PARKED, T_GONE, T_ASLEEP };
static struct {
    _Atomic int gen; /* the stop in progress, 0 when none */
    _Atomic int released; /* the last stop whose threads may go on (futex word) */
    _Atomic int n;
    int         sig; /* the signal, chosen once and kept installed: a pending one may arrive late */
    struct {
        _Atomic pid_t     tid;
        _Atomic int       parked, left; /* the stop it parked for, and left the handler of */
        _Atomic uintptr_t pc, newpc;
        int               state;
    } t[STOP_MAX];
} stop;
static pthread_mutex_t stop_mu = PTHREAD_MUTEX_INITIALIZER;

static void park_handler(int sig, siginfo_t *si, void *ctx) {
    (void) sig, (void) si;
    int saved = errno;
    int g     = atomic_load(&stop.gen);
    if (g) {
        pid_t       tid = (pid_t) syscall(SYS_gettid);
        ucontext_t *uc  = ctx;
        int         n   = atomic_load(&stop.n);
        for (int i = 0; i < n; i++) {
            if (atomic_load(&stop.t[i].tid) != tid) continue;
            atomic_store(&stop.t[i].pc, (uintptr_t) uc->uc_mcontext.gregs[REG_RIP]);
            atomic_store(&stop.t[i].parked, g);
            for (int r; (r = atomic_load(&stop.released)) != g;) {
                syscall(SYS_futex, &stop.released, FUTEX_WAIT_PRIVATE, r, NULL, NULL, 0);
            }
            uintptr_t np = atomic_load(&stop.t[i].newpc);
            if (np) uc->uc_mcontext.gregs[REG_RIP] = (greg_t) np;
            atomic_store(&stop.t[i].left, g); /* its slot may be reused from now on */
            break;
        }
    }
    errno = saved;
}

/* The signal: ours if installed and still ours, else the highest real-time one nobody handles. */
static bool stop_signal(void) {
    struct sigaction cur;
    if (stop.sig && sigaction(stop.sig, NULL, &cur) == 0 && (cur.sa_flags & SA_SIGINFO) &&
        cur.sa_sigaction == park_handler) {
        return true;
    }
    for (int s = SIGRTMAX; s > SIGRTMIN + 2; s--) {
        if (sigaction(s, NULL, &cur) != 0 || (cur.sa_flags & SA_SIGINFO) || cur.sa_handler != SIG_DFL) continue;
        struct sigaction sa;
        memset(&sa, 0, sizeof(sa));
        sa.sa_sigaction = park_handler;
        sa.sa_flags     = SA_SIGINFO | SA_RESTART;
        sigfillset(&sa.sa_mask); /* nothing interrupts a parked thread */
        if (sigaction(s, &sa, NULL) != 0) continue;
        stop.sig = s;
        return true;
    }
    return false;
}

static long now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

/* Reads /proc/self/task/TID/NAME into buf (raw calls: no allocation while threads are parked). */
static ssize_t read_task_file(pid_t tid, const char *name, char *buf, size_t len) {
    char path[64], num[16];
    int  k = 0;
    for (unsigned v = (unsigned) tid; k == 0 || v; v /= 10) num[k++] = (char) ('0' + v % 10);
    size_t o = 0;
    const char *pre = "/proc/self/task/";
    while (*pre) path[o++] = *pre++;
    while (k) path[o++] = num[--k];
    path[o++] = '/';
    while (*name && o < sizeof(path) - 1) path[o++] = *name++;
    path[o] = '\0';
    int fd = (int) syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t n = syscall(SYS_read, fd, buf, len - 1);
    syscall(SYS_close, fd);
    if (n < 0) return -1;
    buf[n] = '\0';
    return n;
}

/* Whether thread tid has sig blocked: the SigBlk line of its status. */
static bool task_blocks(pid_t tid, int sig) {
    char buf[2048];
    if (read_task_file(tid, "status", buf, sizeof(buf)) <= 0) return false;
    const char *p = strstr(buf, "\nSigBlk:\t");
    if (!p) return false;
    unsigned long long m = strtoull(p + 9, NULL, 16);
    return (m >> (sig - 1)) & 1;
}

/* Where thread tid sleeps in a system call: its user PC from /proc/self/task/TID/syscall ("NR args... SP PC");
 * false otherwise. */
static bool task_asleep_at(pid_t tid, uintptr_t *pc) {
    char buf[256];
    /* "-1 SP PC" is a thread out of any system call (preempted: it may be in a handler whose interrupted PC is
     * anywhere): only one inside a system call is known to be at PC. */
    if (read_task_file(tid, "syscall", buf, sizeof(buf)) <= 0 || buf[0] < '0' || buf[0] > '9') return false;
    char *last = strrchr(buf, ' ');
    if (!last) return false;
    char *end = NULL;
    *pc = (uintptr_t) strtoull(last + 1, &end, 16);
    return end != last + 1;
}

/* Adds each thread of /proc/self/task not listed yet (but this one) and signals it; the count added, -1 when the
 * list cannot be read or is full. */
static int stop_more(pid_t self) {
    int fd = (int) syscall(SYS_openat, AT_FDCWD, "/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return -1;
    int  added = 0;
    char buf[4096];
    for (;;) {
        long nb = syscall(SYS_getdents64, fd, buf, sizeof(buf));
        if (nb <= 0) {
            if (nb < 0) added = -1;
            break;
        }
        for (long off = 0; off < nb;) {
            struct { uint64_t ino; int64_t off; unsigned short reclen; unsigned char type; char name[]; } *d =
                (void *) (buf + off);
            off += d->reclen;
            if (d->name[0] < '0' || d->name[0] > '9') continue;
            pid_t tid = (pid_t) strtol(d->name, NULL, 10);
            int   n   = atomic_load(&stop.n), i = 0;
            while (i < n && atomic_load(&stop.t[i].tid) != tid) i++;
            if (tid == self || i < n) continue;
            if (n == STOP_MAX) {
                syscall(SYS_close, fd);
                return -1;
            }
            atomic_store(&stop.t[n].parked, 0);
            atomic_store(&stop.t[n].newpc, 0);
            stop.t[n].state = T_WAIT;
            atomic_store(&stop.t[n].tid, tid);
            atomic_store(&stop.n, n + 1);
            if (syscall(SYS_tgkill, getpid(), tid, stop.sig) != 0) stop.t[n].state = T_GONE;
            added++;
        }
    }
    syscall(SYS_close, fd);
    return added;
}

/* Stops every other thread: true when each is parked, gone, or asleep in the kernel with the signal blocked. Else
 * why says which would not stop, and the threads are released. */
static void release_parked(void);
static bool park_others(char *why, size_t why_len) {
    if (!stop_signal()) {
        snprintf(why, why_len, "no free real-time signal to stop the program's threads with");
        return false;
    }
    static int gens;
    int        g = ++gens;
    if (g <= 0) g = gens = 1;
    atomic_store(&stop.n, 0);
    atomic_store(&stop.gen, g);
    pid_t self     = (pid_t) syscall(SYS_gettid);
    long  deadline = now_ns() + STOP_WAIT_NS, next_check = deadline - STOP_WAIT_NS + 5000000;
    pid_t stuck    = 0;
    int   added;
    bool  unreadable = false;
    /* Again until no thread appears that was not signalled (one may have been made before its maker parked). */
    while ((added = stop_more(self)) != 0) {
        if (added < 0) {
            unreadable = true;
            break;
        }
        for (bool blocked_checked = false;;) {
            int n = atomic_load(&stop.n), waiting = 0;
            for (int i = 0; i < n; i++) {
                if (stop.t[i].state != T_WAIT) continue;
                pid_t tid = atomic_load(&stop.t[i].tid);
                if (atomic_load(&stop.t[i].parked) == g) {
                    stop.t[i].state = T_PARKED;
                } else if (syscall(SYS_tgkill, getpid(), tid, 0) != 0) {
                    stop.t[i].state = T_GONE;
                } else if (blocked_checked && task_blocks(tid, stop.sig)) {
                    uintptr_t pc;
                    if (task_asleep_at(tid, &pc)) {
                        atomic_store(&stop.t[i].pc, pc);
                        stop.t[i].state = T_ASLEEP;
                    } else {
                        waiting++, stuck = tid;
                    }
                } else {
                    waiting++, stuck = tid;
                }
            }
            if (!waiting) break;
            if (now_ns() > deadline) break;
            struct timespec ts = { 0, 50000 };
            nanosleep(&ts, NULL);
            /* Every 5 ms, whether one that has not parked blocks the signal. */
            long t = now_ns();
            blocked_checked = t > next_check;
            if (blocked_checked) next_check = t + 5000000;
        }
        if (now_ns() > deadline) break;
    }
    int n = atomic_load(&stop.n);
    bool all = !unreadable;
    for (int i = 0; i < n && all; i++) all = stop.t[i].state != T_WAIT;
    if (all) return true;
    release_parked();
    if (unreadable) snprintf(why, why_len, "the program's threads cannot be listed (/proc/self/task)");
    else snprintf(why, why_len, "thread %d of the program did not stop within %ld ms", (int) stuck, STOP_WAIT_NS / 1000000);
    return false;
}

/* Lets the threads go, and waits until each parked one has read its new PC: the next stop reuses the slots. */
static void release_parked(void) {
    int g = atomic_load(&stop.gen);
    atomic_store(&stop.gen, 0);
    atomic_store(&stop.released, g);
    syscall(SYS_futex, &stop.released, FUTEX_WAKE_PRIVATE, INT32_MAX, NULL, NULL, 0);
    int n = atomic_load(&stop.n);
    for (int i = 0; i < n; i++) {
        if (atomic_load(&stop.t[i].parked) != g) continue;
        while (atomic_load(&stop.t[i].left) != g) sched_yield();
    }
}

bool ggprof_stop_others(char *why, size_t why_len) {
    pthread_mutex_lock(&stop_mu);
    if (park_others(why, why_len)) return true;
    pthread_mutex_unlock(&stop_mu);
    return false;
}

int ggprof_stop_count(void) { return atomic_load(&stop.n); }

bool ggprof_stop_thread(int i, uintptr_t *pc, bool *asleep) {
    if (stop.t[i].state != T_PARKED && stop.t[i].state != T_ASLEEP) return false;
    *pc     = atomic_load(&stop.t[i].pc);
    *asleep = stop.t[i].state == T_ASLEEP;
    return true;
}

void ggprof_stop_move(int i, uintptr_t pc) { atomic_store(&stop.t[i].newpc, pc); }

void ggprof_stop_release(void) {
    release_parked();
    pthread_mutex_unlock(&stop_mu);
}

#else
bool ggprof_stop_others(char *why, size_t why_len) {
    snprintf(why, why_len, "stopping threads is implemented for x86-64 only");
    return false;
}
int  ggprof_stop_count(void) { return 0; }
bool ggprof_stop_thread(int i, uintptr_t *pc, bool *asleep) {
    (void) i, (void) pc, (void) asleep;
    return false;
}
void ggprof_stop_move(int i, uintptr_t pc) { (void) i, (void) pc; }
void ggprof_stop_release(void) {}
#endif
