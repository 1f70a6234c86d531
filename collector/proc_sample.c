/* The whole run, measured by record, the workload's parent (docs/trace-database.md, "The whole run"): fork to
 * exit, wait4's rusage, the CPUs the workload may use (affinity, cgroup v2 cpu.max), and each thread's state
 * sampled from /proc, blocked stretches merged into runs. The collector reads /proc at nice 19, but on a machine
 * with no CPU to spare each wake-up still preempts a ggml thread, and a thread preempted in a graph holds the
 * others at the next barrier: the period backs off while no thread blocks or wakes, from 5 ms to 1 s while a
 * thread runs (to 100 ms while all are blocked), and while records arrive (graphs compute) it is 1 s at once, nor
 * are the threads listed again but when their count changes (tests/bench/overhead_parts.sh measures the sampler's
 * cost), save a thread that begins to record: the ring tells record (ggprof_ring_new_owners), and it is followed from
 * then (ggprof_proc_sampler_follow). The threads' final counters come from the engine (THREAD_END) however seldom
 * they were sampled, and close the last interval as a sample would. A
 * stretch's edges do not depend on the period: the schedstat counters say how long the thread was neither on a CPU
 * nor waiting for one between two samples, and a thread that blocked (or woke) once in an interval did so that long
 * before its end (after its start). Its children
 * (forked) are found in /proc/PID/task/TID/children, their fork and exit to the sample period, their counters from
 * /proc/PID/stat and status. No file is opened at a sample, only read again (see thread_kids). */
#include "proc_sample.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "trace_db.h"
#include "wire.h"

#define MAX_PROCS   256
#define MAX_THREADS 4096 /* per process: threads past it are not sampled */
#define RESCAN_NS   1000000000ull /* the threads are listed again when the process's thread count changes, and at
                                     * the first sample a second after the last listing (one thread replaced by
                                     * another); the cgroup's quota is read again then */
#define BACK_OFF    200         /* while no thread blocks or wakes, the period doubles up to this many base periods
                                 * while a thread runs (a wake-up then preempts one: the workload's cost), ... */
#define BACK_OFF_ALL_BLOCKED 20 /* ... and up to this many while all are blocked (a wake-up costs the workload
                                 * nothing; one that wakes, runs and blocks again within a period moves the runs'
                                 * edges to the period's ends) */

typedef struct {
    uint64_t start, end;
} span;

typedef struct {
    pid_t    tid;
    int      fd_stat, fd_sched, fd_kids; /* its stat, schedstat and children, kept open; -1: gone (kids: none) */
    char     name[32];
    uint64_t first_ns, last_ns, prev_ns;
    uint64_t cpu_ns, runq_ns, slices; /* /proc/.../schedstat: on a CPU, waiting for one, time slices */
    char     state;                   /* at the last sample: 'R' running or runnable, 'S', 'D'...; 0: none yet */
    bool     in_idle, reported;       /* in a blocked run; the run has been counted as a change */
    uint64_t idle_start, idle_ns;
    span    *idle;
    size_t   n_idle, cap_idle;
} thr;

typedef struct {
    pid_t    pid, ppid;
    int      fd_stat;   /* /proc/PID/stat, kept open: read at every sample for the thread count */
    long     n_threads; /* its num_threads at the last sample */
    bool     waited; /* record's own child: wait4; else sampled */
    bool     gone;
    uint64_t fork_ns, exit_ns;
    int      status;
    bool     has_ru;
    struct rusage ru;
    uint64_t minflt, majflt, utime, stime, nvcsw, nivcsw; /* sampled: clock ticks for the times */
    char     cpus[256];
    int      n_cpus;
    double   quota; /* CPUs (quota / period); < 0: none */
    thr     *t;
    size_t   n_t, cap_t;
} proc;

struct ggprof_proc_sampler {
    proc    *p;
    size_t   n_p;
    uint64_t period_ns, next_ns, min_idle_ns;
    uint64_t cur_ns, next_scan_ns; /* the period now (period_ns to BACK_OFF x); the next listing at the earliest */
    bool     busy;                 /* the last call's busy */
};

int ggprof_cpu_list_count(const char *list) {
    int n = 0;
    const char *s = list;
    while (*s && *s != '\n') {
        char *e;
        long a = strtol(s, &e, 10), b = a;
        if (e == s || a < 0) return -1;
        s = e;
        if (*s == '-') {
            b = strtol(s + 1, &e, 10);
            if (e == s + 1 || b < a) return -1;
            s = e;
        }
        if (b - a >= 1 << 20) return -1;
        n += (int) (b - a + 1);
        if (*s == ',') s++;
        else if (*s && *s != '\n') return -1;
    }
    return n;
}

/* The line after l's, or "" at the end of the text. */
static const char *next_line(const char *l) {
    const char *e = strchr(l, '\n');
    return e ? e + 1 : l + strlen(l);
}

bool ggprof_stat_cpu_parse(const char *text, const cpu_set_t *set, uint64_t *busy, uint64_t *idle, int *n_cpus) {
    uint64_t sb = 0, si = 0;
    int n = 0;
    for (const char *l = text; *l; l = next_line(l)) {
        if (strncmp(l, "cpu", 3) != 0 || l[3] < '0' || l[3] > '9') continue; /* the "cpu " line, intr, ctxt ... */
        char *e;
        unsigned long cpu = strtoul(l + 3, &e, 10);
        if (*e != ' ') return false;
        if (set && (cpu >= CPU_SETSIZE || !CPU_ISSET((int) cpu, set))) continue;
        const char *s = e;
        uint64_t v[8] = { 0 };
        int k = 0;
        while (k < 8) {
            while (*s == ' ') s++;
            if (*s < '0' || *s > '9') break;
            v[k++] = strtoull(s, &e, 10);
            s = e;
        }
        if (k < 4) return false; /* user nice system idle, in every kernel since 2.6 */
        sb += v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
        si += v[3] + v[4];
        n++;
    }
    if (!n) return false;
    *busy   = sb;
    *idle   = si;
    *n_cpus = n;
    return true;
}

double ggprof_cpu_idle_update(ggprof_cpu_idle *c, const char *text, const cpu_set_t *set) {
    uint64_t busy, idle;
    int n;
    if (!ggprof_stat_cpu_parse(text, set, &busy, &idle, &n)) return -1;
    bool     had = c->have && n == c->n_cpus && busy >= c->busy && idle >= c->idle;
    uint64_t db = had ? busy - c->busy : 0, di = had ? idle - c->idle : 0;
    if (had && db + di < 2 * (uint64_t) n) return -1; /* too short to tell: keep the reading */
    c->busy   = busy;
    c->idle   = idle;
    c->n_cpus = n;
    c->have   = true;
    if (!had) return -1;
    return (double) di / (double) (db + di) * n;
}

/* One hierarchy's cgroup of a process, from /proc/PID/cgroup's text: the path of the line whose controllers
 * (its second field) include ctl, or of the v2 line ("0::") when ctl is NULL; "" as the root's. false when there is
 * no such line, or its path is relative, too long, or climbs ("..": the text may come from anywhere). */
static bool cgroup_path(const char *text, const char *ctl, char *path, size_t len) {
    for (const char *l = text; *l; l = next_line(l)) {
        const char *c = strchr(l, ':'), *end = strchr(l, '\n');
        if (!end) end = l + strlen(l);
        if (!c || c > end) continue;
        const char *ce = memchr(c + 1, ':', (size_t) (end - c - 1));
        if (!ce) continue;
        bool match = false;
        if (!ctl) match = ce == c + 1 && strncmp(l, "0:", 2) == 0;
        for (const char *k = c + 1; ctl && k < ce && !match;) { /* "cpu,cpuacct": whole names only */
            size_t n = strcspn(k, ",:");
            match = n == strlen(ctl) && strncmp(k, ctl, n) == 0;
            k += n + 1;
        }
        if (!match) continue;
        const char *v = ce + 1;
        size_t      n = (size_t) (end - v);
        if (n == 0 || *v != '/' || n >= len || memmem(v, n, "..", 2)) return false;
        while (n > 0 && v[n - 1] == '/') n--; /* the root's "/" becomes "" */
        memcpy(path, v, n);
        path[n] = 0;
        return true;
    }
    return false;
}

/* The quota of the cgroup at dir, in CPUs, or -1 for none: v2 "QUOTA PERIOD" in cpu.max ("max PERIOD": none),
 * v1 cpu.cfs_quota_us over cpu.cfs_period_us (-1: none). */
static double cgroup_quota_at(const char *dir, bool v2) {
    char f[GGPROF_CGROUP_PATH_MAX + 32], q[128], r[64];
    long long quota, period;
    if (v2) {
        snprintf(f, sizeof(f), "%s/cpu.max", dir);
        if (ggprof_read_small(f, q, sizeof(q)) <= 0 || sscanf(q, "%lld %lld", &quota, &period) != 2) return -1;
    } else {
        snprintf(f, sizeof(f), "%s/cpu.cfs_quota_us", dir);
        if (ggprof_read_small(f, q, sizeof(q)) <= 0 || sscanf(q, "%lld", &quota) != 1) return -1;
        snprintf(f, sizeof(f), "%s/cpu.cfs_period_us", dir);
        if (ggprof_read_small(f, r, sizeof(r)) <= 0 || sscanf(r, "%lld", &period) != 1) return -1;
    }
    return quota > 0 && period > 0 ? (double) quota / (double) period : -1;
}

/* Climbs from root/rel to root, keeping the tightest quota in *c (its usage file from usage_root, the same
 * relative path, where usage_root is given). */
static void cgroup_climb(const char *root, const char *rel, bool v2, const char *usage_root, ggprof_cgroup_cpu *c) {
    char dir[GGPROF_CGROUP_PATH_MAX + 32];
    size_t root_len = strlen(root);
    if (snprintf(dir, sizeof(dir), "%s%s", root, rel) >= (int) sizeof(dir)) return;
    for (;;) {
        double q = cgroup_quota_at(dir, v2);
        if (q > 0 && (c->quota < 0 || q < c->quota)) {
            c->quota = q;
            c->v2    = v2;
            c->usage[0] = 0;
            if (usage_root) {
                snprintf(c->usage, sizeof(c->usage), "%s%s/%s", usage_root, dir + root_len,
                         v2 ? "cpu.stat" : "cpuacct.usage");
            }
        }
        char *slash = strrchr(dir, '/');
        if (!slash || (size_t) (slash - dir) < root_len) break;
        *slash = 0;
    }
}

void ggprof_cgroup_cpu_find_in(const char *cgroup_text, const char *root, ggprof_cgroup_cpu *c) {
    char rel[GGPROF_CGROUP_PATH_MAX], acct[GGPROF_CGROUP_PATH_MAX], base[GGPROF_CGROUP_PATH_MAX + 32],
        acct_base[GGPROF_CGROUP_PATH_MAX + 32];
    c->quota    = -1;
    c->usage[0] = 0;
    c->v2       = false;
    if (strlen(root) > 256) return;
    if (cgroup_path(cgroup_text, NULL, rel, sizeof(rel))) cgroup_climb(root, rel, true, root, c);
    /* v1: the cpu controller's hierarchy, mounted as cpu or beside cpuacct; the CPU time is cpuacct's, at the same
     * path where the two are set alike (a container's runtime does) */
    if (!cgroup_path(cgroup_text, "cpu", rel, sizeof(rel))) return;
    bool same = cgroup_path(cgroup_text, "cpuacct", acct, sizeof(acct)) && strcmp(acct, rel) == 0;
    static const char *const mounts[][2] = { { "cpu", "cpuacct" }, { "cpu,cpuacct", "cpu,cpuacct" } };
    for (size_t i = 0; i < sizeof(mounts) / sizeof(mounts[0]); i++) {
        struct stat st;
        snprintf(base, sizeof(base), "%s/%s", root, mounts[i][0]);
        snprintf(acct_base, sizeof(acct_base), "%s/%s", root, mounts[i][1]);
        if (stat(base, &st) != 0 || !S_ISDIR(st.st_mode)) continue;
        cgroup_climb(base, rel, false, same ? acct_base : NULL, c);
        return;
    }
}

void ggprof_cgroup_cpu_find(pid_t pid, ggprof_cgroup_cpu *c) {
    char path[64], text[4096];
    snprintf(path, sizeof(path), "/proc/%d/cgroup", (int) pid);
    if (ggprof_read_small(path, text, sizeof(text)) <= 0) text[0] = 0; /* no cgroup: no quota */
    ggprof_cgroup_cpu_find_in(text, "/sys/fs/cgroup", c);
}

bool ggprof_cgroup_usage_parse(const char *text, bool v2, uint64_t *ns) {
    char *e;
    if (!v2) { /* cpuacct.usage: ns */
        if (*text < '0' || *text > '9') return false;
        unsigned long long v = strtoull(text, &e, 10);
        if (*e != '\n' && *e != 0) return false;
        *ns = v;
        return true;
    }
    for (const char *l = text; *l; l = next_line(l)) {
        if (strncmp(l, "usage_usec ", 11) != 0) continue;
        if (l[11] < '0' || l[11] > '9') return false;
        unsigned long long v = strtoull(l + 11, &e, 10);
        if ((*e != '\n' && *e != 0) || v > UINT64_MAX / 1000) return false;
        *ns = v * 1000;
        return true;
    }
    return false;
}

/* The CPUs the process may use: its affinity (Cpus_allowed_list) and the tightest cgroup quota from its cgroup up
 * to the root (ggprof_cgroup_cpu_find). */
static void read_cpus(proc *p) {
    char path[64], buf[4096];
    snprintf(path, sizeof(path), "/proc/%d/status", (int) p->pid);
    if (ggprof_read_small(path, buf, sizeof(buf)) > 0) {
        const char *l = strstr(buf, "\nCpus_allowed_list:");
        if (l) {
            l += strlen("\nCpus_allowed_list:");
            while (*l == ' ' || *l == '\t') l++;
            size_t k = strcspn(l, "\n");
            if (k >= sizeof(p->cpus)) k = sizeof(p->cpus) - 1;
            memcpy(p->cpus, l, k);
            p->cpus[k] = 0;
            p->n_cpus  = ggprof_cpu_list_count(p->cpus);
        }
        const char *v = strstr(buf, "\nvoluntary_ctxt_switches:"), *nv = strstr(buf, "\nnonvoluntary_ctxt_switches:");
        if (v) p->nvcsw = strtoull(v + strlen("\nvoluntary_ctxt_switches:"), NULL, 10);
        if (nv) p->nivcsw = strtoull(nv + strlen("\nnonvoluntary_ctxt_switches:"), NULL, 10);
    }
    ggprof_cgroup_cpu c;
    ggprof_cgroup_cpu_find(p->pid, &c);
    p->quota = c.quota;
}

/* The process's counters (/proc/PID/stat: ppid, minflt, majflt, utime, stime, num_threads), through a descriptor
 * kept open from the first read. False when it has ended (a zombie counts as ended). */
static bool read_proc_stat(proc *p) {
    char buf[1024];
    if (p->fd_stat < 0) {
        snprintf(buf, sizeof(buf), "/proc/%d/stat", (int) p->pid);
        p->fd_stat = open(buf, O_RDONLY | O_CLOEXEC);
        if (p->fd_stat < 0) return false;
    }
    ssize_t n = pread(p->fd_stat, buf, sizeof(buf) - 1, 0);
    if (n <= 0) return false;
    buf[n] = 0;
    const char *r = strrchr(buf, ')');
    if (!r) return false;
    char state;
    unsigned long long minflt, cminflt, majflt, cmajflt, ut, st;
    long threads;
    int ppid;
    if (sscanf(r + 1, " %c %d %*d %*d %*d %*d %*u %llu %llu %llu %llu %llu %llu %*d %*d %*d %*d %ld", &state, &ppid,
               &minflt, &cminflt, &majflt, &cmajflt, &ut, &st, &threads) != 9) {
        return false;
    }
    if (state == 'Z' || state == 'X') return false;
    p->ppid = ppid, p->minflt = minflt, p->majflt = majflt, p->utime = ut, p->stime = st, p->n_threads = threads;
    return true;
}

static proc *add_proc(ggprof_proc_sampler *s, pid_t pid, pid_t ppid, uint64_t now, bool waited) {
    for (size_t i = 0; i < s->n_p; i++) {
        if (s->p[i].pid == pid) return &s->p[i];
    }
    if (s->n_p >= MAX_PROCS) return NULL;
    proc *p = &s->p[s->n_p++];
    memset(p, 0, sizeof(*p));
    p->pid = pid, p->ppid = ppid, p->fork_ns = now, p->waited = waited, p->quota = -1, p->n_cpus = -1, p->fd_stat = -1;
    return p;
}

/* Ends the thread's blocked run at end; returns whether it is kept (at least min_ns long). */
static bool idle_close(thr *t, uint64_t end, uint64_t min_ns) {
    if (!t->in_idle) return false;
    t->in_idle = false;
    if (end < t->idle_start + min_ns) return false;
    if (t->n_idle == t->cap_idle) {
        size_t cap = t->cap_idle ? 2 * t->cap_idle : 16;
        span  *n   = realloc(t->idle, cap * sizeof(*n));
        if (!n) return false;
        t->idle = n, t->cap_idle = cap;
    }
    t->idle[t->n_idle++] = (span){ t->idle_start, end };
    t->idle_ns += end - t->idle_start;
    return true;
}

/* A thread no longer read: its descriptors closed; an open blocked run stays open for the store. */
static void thr_gone(thr *t) {
    if (t->fd_stat >= 0) close(t->fd_stat);
    if (t->fd_sched >= 0) close(t->fd_sched);
    if (t->fd_kids >= 0) close(t->fd_kids);
    t->fd_stat = t->fd_sched = t->fd_kids = -1;
}

/* A process no longer sampled (it ended, or the workload did): its descriptors closed; its threads' open runs are
 * ended by the store (thread_end_merge). */
static void proc_gone(proc *p) {
    if (p->fd_stat >= 0) close(p->fd_stat);
    p->fd_stat = -1;
    for (size_t k = 0; k < p->n_t; k++) thr_gone(&p->t[k]);
}

static void add_thread(proc *p, pid_t tid, uint64_t now) {
    for (size_t i = 0; i < p->n_t; i++) {
        if (p->t[i].tid == tid && p->t[i].fd_stat >= 0) return;
    }
    if (p->n_t >= MAX_THREADS) return;
    if (p->n_t == p->cap_t) {
        size_t cap = p->cap_t ? 2 * p->cap_t : 16;
        thr   *n   = realloc(p->t, cap * sizeof(*n));
        if (!n) return;
        p->t = n, p->cap_t = cap;
    }
    char path[96];
    thr *t = &p->t[p->n_t];
    memset(t, 0, sizeof(*t));
    t->tid = tid;
    snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", (int) p->pid, (int) tid);
    t->fd_stat = open(path, O_RDONLY | O_CLOEXEC);
    snprintf(path, sizeof(path), "/proc/%d/task/%d/schedstat", (int) p->pid, (int) tid);
    t->fd_sched = open(path, O_RDONLY | O_CLOEXEC);
    snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int) p->pid, (int) tid);
    t->fd_kids = open(path, O_RDONLY | O_CLOEXEC); /* a kernel without CONFIG_PROC_CHILDREN has none */
    if (t->fd_stat < 0 || t->fd_sched < 0) {
        if (t->fd_kids >= 0) close(t->fd_kids);
        if (t->fd_stat >= 0) close(t->fd_stat);
        if (t->fd_sched >= 0) close(t->fd_sched);
        return;
    }
    t->first_ns = t->last_ns = t->prev_ns = now;
    p->n_t++;
}

/* The process's threads, and the CPUs it may use. */
static void rescan(proc *p, uint64_t now) {
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/task", (int) p->pid);
    DIR *d = opendir(path);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] >= '0' && e->d_name[0] <= '9') add_thread(p, (pid_t) atoi(e->d_name), now);
    }
    closedir(d);
    read_cpus(p);
}

/* The children a thread forked (/proc/PID/task/TID/children, read through its descriptor: no file is opened or
 * closed at a sample, which on this kernel wakes RCU's thread, one more preemption of the workload). */
static void thread_kids(ggprof_proc_sampler *s, proc *p, thr *t, uint64_t now) {
    char buf[512];
    ssize_t n = t->fd_kids >= 0 ? pread(t->fd_kids, buf, sizeof(buf) - 1, 0) : -1;
    if (n <= 0) return;
    buf[n] = 0;
    for (char *c = buf, *end; *c; c = end) {
        long k = strtol(c, &end, 10);
        if (end == c) break;
        if (k > 0) add_proc(s, (pid_t) k, p->pid, now, false);
    }
}

/* The thread's counters read at now, in state ('R' running or runnable, 'S', 'D'...): the interval since its last
 * reading moves its blocked runs. A thread not runnable at a reading is in a blocked run; where the run begins and
 * ends comes from the counters: the time the thread was neither on a CPU nor in the run queue between two readings
 * (blocked) lies at the end of the interval in which it went from running to blocked, at the start of the one in
 * which it woke, exact when it did so once there. An interval in which it woke, ran a tenth of it or more, and
 * blocked again ends the run at the interval's start and begins another at its end. A thread found blocked at its
 * first reading is in a run from then (what came before is not claimed). Returns whether a run of at least min_ns
 * began (once it is that long) or ended. */
static bool thread_advance(thr *t, uint64_t now, char state, uint64_t cpu, uint64_t runq, uint64_t slices, uint64_t min_ns) {
    uint64_t dt = now - t->prev_ns, dcpu = cpu >= t->cpu_ns ? cpu - t->cpu_ns : 0;
    uint64_t drunq = runq >= t->runq_ns ? runq - t->runq_ns : 0, busy = dcpu + drunq;
    uint64_t blocked = dt > busy ? dt - busy : 0;
    bool sampled = t->state != 0, asleep = state != 'R', changed = false;
    t->cpu_ns = cpu, t->runq_ns = runq, t->slices = slices, t->last_ns = now;
    if (!sampled && asleep) {
        t->in_idle = true, t->reported = false, t->idle_start = now;
    } else if (sampled && dt > 0) {
        if (t->in_idle && (!asleep || dcpu * 10 > dt)) {
            changed = idle_close(t, asleep ? t->prev_ns : t->prev_ns + blocked, min_ns) || t->reported;
            if (asleep) t->in_idle = true, t->reported = false, t->idle_start = now; /* blocked again */
        } else if (!t->in_idle && asleep) {
            t->in_idle = true, t->reported = false, t->idle_start = now - blocked;
        }
        if (t->in_idle && !t->reported && now >= t->idle_start + min_ns) changed = t->reported = true;
    }
    t->prev_ns = now;
    t->state   = state;
    return changed;
}

/* One thread at now, from its stat and schedstat (thread_advance). A thread that has ended keeps its open run, if
 * any, for the store: the engine's reading at its end says where it ended (thread_end_merge). */
static bool sample_thread(ggprof_proc_sampler *s, thr *t, uint64_t now) {
    char st[512], sc[128];
    ssize_t a = pread(t->fd_stat, st, sizeof(st) - 1, 0), b = pread(t->fd_sched, sc, sizeof(sc) - 1, 0);
    if (a <= 0 || b <= 0) {
        thr_gone(t);
        return false;
    }
    st[a] = 0, sc[b] = 0;
    ggprof_proc_thread pt;
    if (ggprof_proc_thread_parse(st, sc, &pt) != 0) return false;
    if (!t->name[0]) snprintf(t->name, sizeof(t->name), "%s", pt.name);
    if (pt.state == 'Z' || pt.state == 'X') {
        t->cpu_ns = pt.cpu_ns, t->runq_ns = pt.runq_ns, t->slices = pt.slices, t->last_ns = now;
        thr_gone(t);
        return false;
    }
    return thread_advance(t, now, pt.state, pt.cpu_ns, pt.runq_ns, pt.slices, s->min_idle_ns);
}

ggprof_proc_sampler *ggprof_proc_sampler_new(pid_t pid, uint64_t fork_ns, long period_ms) {
    ggprof_proc_sampler *s = calloc(1, sizeof(*s));
    if (!s || !(s->p = calloc(MAX_PROCS, sizeof(proc)))) {
        free(s);
        return NULL;
    }
    s->period_ns   = (uint64_t) (period_ms > 0 ? period_ms : 5) * 1000000;
    s->min_idle_ns = 2 * s->period_ns;
    s->cur_ns      = s->period_ns;
    s->next_ns = s->next_scan_ns = fork_ns;
    add_proc(s, pid, getpid(), fork_ns, true);
    /* The CPUs it may use, read now, before record goes to nice 19: where the workload keeps record's CPUs busy (a
     * workload pinned with record to one CPU), its first sample may come after the workload has ended, when /proc no
     * longer has them. A listing reads them again (a program that sets its own affinity). */
    read_cpus(&s->p[0]);
    return s;
}

long ggprof_proc_sampler_tick(ggprof_proc_sampler *s, uint64_t now, bool busy) {
    if (!s) return -1;
    /* Graphs began to compute since the last call (records arrived, or a process's first graph began): sampled now,
     * on this wake-up, and the longest period from here, not from the next sample due, a step of the start-up's
     * doubling that would wake record once more inside the first second of compute. */
    bool began = busy && !s->busy;
    s->busy    = busy;
    if (now >= s->next_ns || began) {
        /* the listing (opening /proc/PID/task, status, cgroup: files closed again, whose dentries the kernel frees
         * through RCU, whose thread then wakes on a CPU ggml wants) waits while graphs compute, unless the thread
         * count changed */
        bool due = now >= s->next_scan_ns && !busy, changed = false, running = false;
        for (size_t i = 0; i < s->n_p; i++) {
            proc *p = &s->p[i];
            if (p->gone) continue;
            long n_threads = p->n_threads;
            if (!read_proc_stat(p) && !p->waited) {
                /* a sampled child ended (or was reaped) since the last sample */
                p->gone = true, p->exit_ns = now;
                proc_gone(p);
                continue;
            }
            if (due || p->n_t == 0 || p->n_threads != n_threads) rescan(p, now);
            for (size_t k = 0; k < p->n_t; k++) {
                thr *t = &p->t[k];
                if (t->fd_stat < 0) continue;
                changed |= sample_thread(s, t, now);
                if (t->fd_stat < 0) continue; /* it ended */
                thread_kids(s, p, t, now);
                running |= t->state == 'R';
            }
        }
        if (due) s->next_scan_ns = now + RESCAN_NS;
        /* No thread blocked or woke: the next sample may wait longer (the wake-ups are what the workload feels of
         * the sampler); one that did brings the base period back. While graphs compute (busy: every computing
         * thread runs, and each sample preempts one on a machine with no CPU to spare) the longest period comes at
         * once: a short run's generation fell in the start-up's doubling (samples 160 and 320 ms after the fork),
         * each a preemption there (docs/how-it-works.md, "Overhead", has what that cost). The threads' counters at the end do not depend on it: the
         * engine reads them as each thread ends and as the process exits (THREAD_END, merged by
         * ggprof_proc_sampler_store). Threads and processes that start or end do not bring the base period back: a
         * new one is sampled from the sample that finds it, and its runs' edges do not depend on the period. */
        uint64_t most = (running ? BACK_OFF : BACK_OFF_ALL_BLOCKED) * s->period_ns;
        s->cur_ns     = busy ? most : changed ? s->period_ns : s->cur_ns * 2 > most ? most : s->cur_ns * 2;
        s->next_ns    = now + s->cur_ns;
    }
    return (long) ((s->next_ns - now + 999999) / 1000000);
}

void ggprof_proc_sampler_follow(ggprof_proc_sampler *s, pid_t pid, pid_t tid, uint64_t now) {
    if (!s) return;
    for (size_t i = 0; i < s->n_p; i++) {
        proc *p = &s->p[i];
        if (p->pid != pid || p->gone) continue;
        size_t n = p->n_t;
        add_thread(p, tid, now);
        if (p->n_t > n) sample_thread(s, &p->t[n], now); /* its counters from now: the next sample follows it */
        return;
    }
}

void ggprof_proc_sampler_exit(ggprof_proc_sampler *s, uint64_t exit_ns, int status, const struct rusage *ru) {
    if (!s) return;
    proc *p    = &s->p[0];
    p->exit_ns = exit_ns, p->gone = true;
    p->status  = WIFEXITED(status) ? WEXITSTATUS(status) : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 1;
    if (ru) p->ru = *ru, p->has_ru = true;
    for (size_t i = 0; i < s->n_p; i++) proc_gone(&s->p[i]);
}

/* "key.PID" = value: a meta key of one process. */
static void meta_of(sqlite3 *db, const char *key, int pid, const char *value) {
    char k[64];
    snprintf(k, sizeof(k), "%s.%d", key, pid);
    ggprof_db_meta(db, k, value);
}

static int64_t tv_ns(struct timeval tv) { return (int64_t) tv.tv_sec * 1000000000 + (int64_t) tv.tv_usec * 1000; }

/* Named columns, values bound by name (trace_db.h): no writer depends on the DDL's column order. */
static const char k_ins_process[] =
    "INSERT INTO processes_time(pid, ppid, how, fork_ns, exit_ns, exit_status, utime_ns, stime_ns, minflt, majflt,"
    " nvcsw, nivcsw, maxrss_kib, cpus_allowed, n_cpus_allowed, cpu_quota, n_threads) VALUES(:pid, :ppid, :how,"
    " :fork_ns, :exit_ns, :exit_status, :utime_ns, :stime_ns, :minflt, :majflt, :nvcsw, :nivcsw, :maxrss_kib,"
    " :cpus_allowed, :n_cpus_allowed, :cpu_quota, :n_threads)";
static const char k_ins_idle[] = "INSERT INTO thread_idle(pid, tid, start_ns, end_ns) VALUES(:pid, :tid, :start_ns, :end_ns)";
static const char k_ins_thread[] =
    "INSERT INTO thread_stats(pid, tid, name, first_ns, last_ns, cpu_ns, runq_ns, timeslices, idle_ns)"
    " VALUES(:pid, :tid, :name, :first_ns, :last_ns, :cpu_ns, :runq_ns, :timeslices, :idle_ns)";

/* One processes_time row; 0 or -1. */
static int store_process(sqlite3_stmt *pt, const proc *p, int64_t n_threads, long tck) {
    int64_t tick = 1000000000 / tck;
    int bad = ggprof_db_bind_int(pt, ":pid", p->pid) | ggprof_db_bind_int(pt, ":ppid", p->ppid) |
              ggprof_db_bind_text(pt, ":how", p->waited ? "wait4" : "sampled") |
              ggprof_db_bind_int(pt, ":fork_ns", (int64_t) p->fork_ns) | ggprof_db_bind_int(pt, ":exit_ns", (int64_t) p->exit_ns) |
              (p->waited ? ggprof_db_bind_int(pt, ":exit_status", p->status) : ggprof_db_bind_null(pt, ":exit_status"));
    if (p->has_ru) {
        bad |= ggprof_db_bind_int(pt, ":utime_ns", tv_ns(p->ru.ru_utime)) | ggprof_db_bind_int(pt, ":stime_ns", tv_ns(p->ru.ru_stime)) |
               ggprof_db_bind_int(pt, ":minflt", p->ru.ru_minflt) | ggprof_db_bind_int(pt, ":majflt", p->ru.ru_majflt) |
               ggprof_db_bind_int(pt, ":nvcsw", p->ru.ru_nvcsw) | ggprof_db_bind_int(pt, ":nivcsw", p->ru.ru_nivcsw) |
               ggprof_db_bind_int(pt, ":maxrss_kib", p->ru.ru_maxrss);
    } else {
        bad |= ggprof_db_bind_int(pt, ":utime_ns", (int64_t) p->utime * tick) | ggprof_db_bind_int(pt, ":stime_ns", (int64_t) p->stime * tick) |
               ggprof_db_bind_int(pt, ":minflt", (int64_t) p->minflt) | ggprof_db_bind_int(pt, ":majflt", (int64_t) p->majflt) |
               ggprof_db_bind_int(pt, ":nvcsw", (int64_t) p->nvcsw) | ggprof_db_bind_int(pt, ":nivcsw", (int64_t) p->nivcsw) |
               ggprof_db_bind_null(pt, ":maxrss_kib");
    }
    bad |= ggprof_db_bind_text(pt, ":cpus_allowed", p->cpus[0] ? p->cpus : NULL) |
           (p->n_cpus > 0 ? ggprof_db_bind_int(pt, ":n_cpus_allowed", p->n_cpus) : ggprof_db_bind_null(pt, ":n_cpus_allowed")) |
           (p->quota > 0 ? ggprof_db_bind_real(pt, ":cpu_quota", p->quota) : ggprof_db_bind_null(pt, ":cpu_quota")) |
           (n_threads > 0 ? ggprof_db_bind_int(pt, ":n_threads", n_threads) : ggprof_db_bind_null(pt, ":n_threads"));
    return bad ? -1 : ggprof_db_step_write(pt);
}

/* One thread_stats row, and its thread_idle runs when keep (a thread that calls into ggml, or the main one); its
 * idle_ns NULL when not kept or not followed (a thread the sampler never saw). */
static int store_thread(sqlite3_stmt *ts, sqlite3_stmt *ti, int32_t pid, const thr *t, bool keep, bool followed) {
    int bad = ggprof_db_bind_int(ts, ":pid", pid) | ggprof_db_bind_int(ts, ":tid", t->tid) | ggprof_db_bind_text(ts, ":name", t->name) |
              ggprof_db_bind_int(ts, ":first_ns", (int64_t) t->first_ns) | ggprof_db_bind_int(ts, ":last_ns", (int64_t) t->last_ns) |
              ggprof_db_bind_int(ts, ":cpu_ns", (int64_t) t->cpu_ns) | ggprof_db_bind_int(ts, ":runq_ns", (int64_t) t->runq_ns) |
              ggprof_db_bind_int(ts, ":timeslices", (int64_t) t->slices) |
              (keep && followed ? ggprof_db_bind_int(ts, ":idle_ns", (int64_t) t->idle_ns) : ggprof_db_bind_null(ts, ":idle_ns"));
    int rc = bad ? -1 : ggprof_db_step_write(ts);
    for (size_t j = 0; keep && j < t->n_idle && rc == 0; j++) {
        bad = ggprof_db_bind_int(ti, ":pid", pid) | ggprof_db_bind_int(ti, ":tid", t->tid) |
              ggprof_db_bind_int(ti, ":start_ns", (int64_t) t->idle[j].start) | ggprof_db_bind_int(ti, ":end_ns", (int64_t) t->idle[j].end);
        rc = bad ? -1 : ggprof_db_step_write(ti);
    }
    return rc;
}

/* Whether the thread calls into ggml: it recorded, or ran a llama_decode, as the store saw them come
 * (schema/store.c); the main thread counts too. */
static bool is_ggml_thread(sqlite3_stmt *rec, int32_t pid, pid_t tid) {
    ggprof_db_bind_int(rec, ":pid", pid);
    ggprof_db_bind_int(rec, ":tid", tid);
    bool keep = tid == pid || (sqlite3_step(rec) == SQLITE_ROW && sqlite3_column_int(rec, 0));
    sqlite3_reset(rec);
    return keep;
}

/* The engine's reading of a thread's counters as it ended (or as its process exited: THREAD_END, kept in
 * temp.thread_ends by the store), where it is later than the sampler's last: a short run's threads, sampled rarely
 * while its graphs compute, still get their whole time on and off the CPUs, and the interval since their last sample
 * moves their blocked runs as a sample would (the thread reading its own counters runs; one read at its process's
 * exit at least was not blocked past it). Then a run still open ends at the last reading. */
static void thread_end_merge(sqlite3_stmt *ends, int32_t pid, thr *t, uint64_t min_ns) {
    if (ends) {
        ggprof_db_bind_int(ends, ":pid", pid);
        ggprof_db_bind_int(ends, ":tid", t->tid);
        if (sqlite3_step(ends) == SQLITE_ROW && (uint64_t) sqlite3_column_int64(ends, 3) >= t->last_ns) {
            thread_advance(t, (uint64_t) sqlite3_column_int64(ends, 3), 'R', (uint64_t) sqlite3_column_int64(ends, 4),
                           (uint64_t) sqlite3_column_int64(ends, 5), (uint64_t) sqlite3_column_int64(ends, 6), min_ns);
            if (!t->name[0] && sqlite3_column_text(ends, 1)) {
                snprintf(t->name, sizeof(t->name), "%s", (const char *) sqlite3_column_text(ends, 1));
            }
        }
        sqlite3_reset(ends);
    }
    idle_close(t, t->prev_ns, min_ns);
}

/* The rows of the threads of p that only the engine reported; 0 or -1. */
static int store_unsampled(sqlite3_stmt *ends, sqlite3_stmt *ts, sqlite3_stmt *ti, sqlite3_stmt *rec, const proc *p) {
    ggprof_db_bind_int(ends, ":pid", p->pid);
    ggprof_db_bind_null(ends, ":tid");
    int rc = 0;
    while (rc == 0 && sqlite3_step(ends) == SQLITE_ROW) {
        pid_t tid  = (pid_t) sqlite3_column_int(ends, 0);
        bool  seen = false;
        for (size_t k = 0; k < p->n_t && !seen; k++) seen = p->t[k].tid == tid;
        if (seen) continue;
        thr t;
        memset(&t, 0, sizeof(t));
        t.tid = tid;
        if (sqlite3_column_text(ends, 1)) snprintf(t.name, sizeof(t.name), "%s", (const char *) sqlite3_column_text(ends, 1));
        uint64_t start = (uint64_t) sqlite3_column_int64(ends, 2);
        t.last_ns  = (uint64_t) sqlite3_column_int64(ends, 3);
        t.first_ns = start > p->fork_ns && start <= t.last_ns ? start : p->fork_ns;
        t.cpu_ns   = (uint64_t) sqlite3_column_int64(ends, 4);
        t.runq_ns  = (uint64_t) sqlite3_column_int64(ends, 5);
        t.slices   = (uint64_t) sqlite3_column_int64(ends, 6);
        rc = store_thread(ts, ti, p->pid, &t, is_ggml_thread(rec, p->pid, tid), false);
    }
    sqlite3_reset(ends);
    return rc;
}

int ggprof_proc_sampler_store(ggprof_proc_sampler *s, sqlite3 *db) {
    if (!s) return 0;
    sqlite3_stmt *pt = NULL, *ti = NULL, *ts = NULL, *rec = NULL, *ends = NULL;
    int rc = sqlite3_exec(db, "BEGIN", NULL, NULL, NULL) == SQLITE_OK && ggprof_db_prepare_write(db, k_ins_process, &pt) == 0 &&
                     ggprof_db_prepare_write(db, k_ins_idle, &ti) == 0 && ggprof_db_prepare_write(db, k_ins_thread, &ts) == 0 &&
                     /* the threads that call into ggml: those that recorded, or ran a llama_decode, as the store
                      * saw them come (schema/store.c) */
                     ggprof_db_prepare_write(db, "SELECT EXISTS(SELECT 1 FROM ggml_threads WHERE pid = :pid AND tid = :tid)",
                                             &rec) == 0
                 ? 0
                 : -1;
    /* the engine's readings at the threads' ends: none in a database not made by the store (no such table) */
    if (rc == 0 && ggprof_db_prepare_write(db, "SELECT tid, name, start_ns, at_ns, cpu_ns, runq_ns, slices FROM"
                                               " temp.thread_ends WHERE pid = :pid AND (:tid IS NULL OR tid = :tid)"
                                               " ORDER BY tid", &ends) != 0) {
        ends = NULL;
    }
    long tck = sysconf(_SC_CLK_TCK);
    if (tck <= 0) tck = 100;
    for (size_t i = 0; i < s->n_p && rc == 0; i++) {
        proc *p = &s->p[i];
        if (!p->gone) p->exit_ns = p->n_t ? p->t[0].last_ns : p->fork_ns; /* still running: as last seen */
        /* the engine's count, stored where its message arrived (meta threads.PID, schema/store.c) */
        int64_t n_threads = ggprof_db_cpu_threads(db, p->pid);
        rc = store_process(pt, p, n_threads, tck);
        char v[64];
        if (p->n_cpus > 0) snprintf(v, sizeof(v), "%d", p->n_cpus), meta_of(db, "cpus_allowed", p->pid, v);
        if (p->quota > 0) snprintf(v, sizeof(v), "%.3f", p->quota), meta_of(db, "cpu_quota", p->pid, v);
        for (size_t k = 0; k < p->n_t && rc == 0; k++) {
            /* the sampler's own state: a store ends the sampling (the last, or a snapshot's in a child of its own) */
            thr *t = &p->t[k];
            thread_end_merge(ends, p->pid, t, s->min_idle_ns);
            rc = store_thread(ts, ti, p->pid, t, is_ggml_thread(rec, p->pid, t->tid), true);
        }
        /* threads the sampler never saw (born and gone between two samples, or after the last): the engine's
         * counters only, their blocked time not followed */
        if (ends && rc == 0) rc = store_unsampled(ends, ts, ti, rec, p);
    }
    sqlite3_finalize(pt);
    sqlite3_finalize(ti);
    sqlite3_finalize(ts);
    sqlite3_finalize(rec);
    sqlite3_finalize(ends);
    sqlite3_exec(db, rc == 0 ? "COMMIT" : "ROLLBACK", NULL, NULL, NULL);
    sqlite3_exec(db, "DROP TABLE IF EXISTS temp.ggml_threads", NULL, NULL, NULL);
    sqlite3_exec(db, "DROP TABLE IF EXISTS temp.thread_ends", NULL, NULL, NULL);
    return rc;
}

void ggprof_proc_sampler_free(ggprof_proc_sampler *s) {
    if (!s) return;
    for (size_t i = 0; i < s->n_p; i++) {
        proc_gone(&s->p[i]);
        for (size_t k = 0; k < s->p[i].n_t; k++) free(s->p[i].t[k].idle);
        free(s->p[i].t);
    }
    free(s->p);
    free(s);
}
