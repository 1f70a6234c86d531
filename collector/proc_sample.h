/* The whole run from the workload's parent: fork to exit, wait4's rusage, the CPUs it may use, and its threads'
 * blocked time sampled from /proc (docs/trace-database.md: processes_time, thread_idle, thread_stats). */
#ifndef GGPROF_PROC_SAMPLE_H
#define GGPROF_PROC_SAMPLE_H

#include <sched.h>
#include <sqlite3.h>
#include <stdint.h>
#include <sys/resource.h>
#include <stdbool.h>
#include <sys/types.h>

typedef struct ggprof_proc_sampler ggprof_proc_sampler;

/* A sampler of pid (the workload record forked at fork_ns) every period_ms; NULL when out of memory. */
ggprof_proc_sampler *ggprof_proc_sampler_new(pid_t pid, uint64_t fork_ns, long period_ms);

/* Samples when a sample is due at now; returns the milliseconds until the next one. busy: the workload published
 * records since the last call (its graphs compute): a thread blocking or waking then does not shorten the period,
 * and the first call that finds it so (after one that did not) samples at once and takes the longest period. */
long ggprof_proc_sampler_tick(ggprof_proc_sampler *s, uint64_t now, bool busy);

/* A thread of pid that began to record at now (ggprof_ring_new_owners): followed from now, not from the next listing
 * of the threads, which waits while graphs compute (a thread born and gone within that wait was never followed, its
 * idle unknown). A process the sampler has not found yet is left to its listing. */
void ggprof_proc_sampler_follow(ggprof_proc_sampler *s, pid_t pid, pid_t tid, uint64_t now);

/* The workload ended at exit_ns (wait4 returned it) with status and its rusage. */
void ggprof_proc_sampler_exit(ggprof_proc_sampler *s, uint64_t exit_ns, int status, const struct rusage *ru);

/* Writes the tables and the meta keys (threads.PID, cpus_allowed.PID, cpu_quota.PID) into the finished trace db.
 * Returns 0 or -1. */
int ggprof_proc_sampler_store(ggprof_proc_sampler *s, sqlite3 *db);

void ggprof_proc_sampler_free(ggprof_proc_sampler *s);

/* "0-3,6" -> 5; -1 when it cannot be read. */
int ggprof_cpu_list_count(const char *list);

/* The idle CPU time between two readings of /proc/stat, over the CPUs record may run on (its affinity: the CPUs a
 * taskset or a container's cpuset leaves it). record's builder stores rounds while the workload runs only when at
 * least half of one of them was idle since the last reading: a nice-19 thread still gets its share of a busy CPU
 * (about 1.5%), and on a machine whose CPUs ggml's threads keep busy each of its slices stops a ggml thread, and
 * the others at the next barrier. */
typedef struct {
    uint64_t busy, idle; /* USER_HZ ticks at the last reading */
    int      n_cpus;     /* the CPUs summed then */
    bool     have;
} ggprof_cpu_idle;

/* Sums the "cpuN user nice system idle iowait irq softirq steal ..." lines of /proc/stat's text whose N is in set
 * (every one when set is NULL): busy (user, nice, system, irq, softirq, steal) and idle (idle, iowait) ticks, and
 * the lines summed in *n_cpus. false when no line was summed or one of them is malformed. */
bool ggprof_stat_cpu_parse(const char *text, const cpu_set_t *set, uint64_t *busy, uint64_t *idle, int *n_cpus);

/* Takes the reading in text and returns the idle CPUs on average since the one before (the idle share of the ticks
 * times the CPUs summed), or -1 when there is none before, the text is not a reading, or under 2 ticks a CPU passed. */
double ggprof_cpu_idle_update(ggprof_cpu_idle *c, const char *text, const cpu_set_t *set);

/* A process's CPU quota: the tightest over its cgroup and the cgroup's ancestors, in CPUs (quota over period), in
 * either hierarchy: cgroup v2 (`cpu.max`) and v1's cpu controller (`cpu.cfs_quota_us`, `cpu.cfs_period_us`, where a
 * host still mounts it: Docker's --cpus sets one or the other). usage names the file that counts the CPU time of the
 * cgroup that quota belongs to (v2 `cpu.stat`'s usage_usec, v1 `cpuacct.usage` where cpuacct's cgroup is the cpu
 * controller's), "" when none does. */
#define GGPROF_CGROUP_PATH_MAX 4096
typedef struct {
    double quota; /* < 0: none */
    bool   v2;    /* the quota is v2's (usage is a cpu.stat) */
    char   usage[GGPROF_CGROUP_PATH_MAX + 320];
} ggprof_cgroup_cpu;

/* From /proc/PID/cgroup's text, under a cgroup file system mounted at root (/sys/fs/cgroup: v2 there, v1's
 * controllers in root/cpu or root/cpu,cpuacct). A path that is not absolute or climbs ("..") is not followed. */
void ggprof_cgroup_cpu_find_in(const char *cgroup_text, const char *root, ggprof_cgroup_cpu *c);
void ggprof_cgroup_cpu_find(pid_t pid, ggprof_cgroup_cpu *c);

/* The CPU time in a usage file's text (ggprof_cgroup_cpu.usage), in ns; false when it is not one. */
bool ggprof_cgroup_usage_parse(const char *text, bool v2, uint64_t *ns);

#endif
