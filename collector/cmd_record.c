/* ggprof record: runs a command with libggprof.so injected, drains the ring while it runs, stores the trace. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "collector_commands.h"
#include "clock_map.h"
#include "json_v3.h"
#include "live.h"
#include "metrics_http.h"
#include "outfile.h"
#include "proc_sample.h"
#include "rerun_env.h"
#include "progress.h"
#include "ring.h"
#include "self_path.h"
#include "spill.h"
#include "store.h"
#include "trace_lock.h"
#include "trace_db.h"
#include "v3_format.h"

const char ggprof_usage_record[] =
    "usage: ggprof record " GGPROF_HELP_SYNOPSIS " -- CMD [ARGS...]\n"
    "\n"
    "Runs CMD with the ggprof engine injected (LD_PRELOAD) and records every ggml graph, split, copy and\n"
    "CPU op it computes. While CMD runs, records are copied out of the ring (to OUT.db.spill) and stored by a\n"
    "second thread at nice 19 while at least half a CPU is idle, and half a CPU of the cgroup's CPU quota if it\n"
    "has one (none is taken from a workload that keeps every CPU busy; GGPROF_RECORD_BUILDER=1 stores regardless,\n"
    "=0 never); what is left is stored when CMD ends. Writes OUT.db (SQLite; see 'ggprof query') and OUT.json.gz (the version-3 JSON of\n"
    "the upstream profiler, one record per line), both readable by their owner only (mode 0600, as perf.data).\n"
    "Exits with CMD's exit status (128+N if signal N ended it).\n"
    "Ends with a line per process: the levels that produced records, the CPU splits timed op by op and with\n"
    "which of ggml's tick rules (docs/how-it-works.md), then how ggml was reached (through the PLT of its shared\n"
    "library; or, where ggml is inside the program, static or LTO, the entries patched and the backends' tables),\n"
    "what the engine turned off for that ggml, and why.\n"
    "\n"
    GGPROF_HELP_OPTIONS
    "\n"
    "SIGUSR1 sent to this process turns recording off when on, on when off: each on-period is a capture window\n"
    "(the trace's windows table; report lists them). A scheduler graph is recorded whole when recording was on\n"
    "as it began, else not at all. ggprof_pause() and ggprof_resume() in CMD pause within the windows.\n"
    "\n"
    "GGML_PROFILE is ignored under 'ggprof record' (the collector decides what is recorded).\n"
    "\n"
    "GPU work is timed on the device's own clock (docs/backends.md): Vulkan dispatches through a layer\n"
    "(GGPROF_VULKAN=0: off), CUDA kernels through CUPTI (GGPROF_CUDA=0: off), OpenCL kernels. Vulkan dispatches\n"
    "and CUDA kernels are joined to their graph node and become its OP record (timing 4), fused groups named\n"
    "(RMS_NORM+MUL); GGPROF_DEVICE_NODES=0 joins them to their split only. record sets GGML_VK_DEBUG_MARKERS=1\n"
    "in CMD so that dispatches carry ggml's shader names (GGPROF_VULKAN_NAMES=0: leave it unset).\n";

static volatile sig_atomic_t g_child;
static volatile sig_atomic_t g_toggles;   /* SIGUSR1s received */
static volatile sig_atomic_t g_snapshots; /* SIGUSR2s received */

static ggprof_ring *volatile g_poke_ring;

static void on_sigchld(int sig) {
    (void) sig;
    int e = errno; /* ggprof_ring_poke makes a system call */
    if (g_poke_ring) ggprof_ring_poke(g_poke_ring);
    errno = e;
}

static void on_sigusr1(int sig) {
    g_toggles++;
    on_sigchld(sig); /* wakes the collector up */
}

static void on_sigusr2(int sig) {
    g_snapshots++;
    on_sigchld(sig);
}

static void forward_signal(int sig) {
    if (g_child > 0) kill((pid_t) g_child, sig);
}

static int parse_level(const char *s) {
    if (strcmp(s, "graph") == 0) return GGPROF_LEVEL_GRAPH;
    if (strcmp(s, "split") == 0) return GGPROF_LEVEL_SPLIT;
    if (strcmp(s, "op") == 0) return GGPROF_LEVEL_OP;
    return -1;
}

static const char *level_name(int level) { return level == 0 ? "graph" : level == 1 ? "split" : "op"; }

/* libggprof.so in ../lib from ggprof's own file (/proc/self/exe): build/bin/ggprof -> build/lib/libggprof.so, and
 * installed (make install) PREFIX/lib/ggprof/bin/ggprof -> PREFIX/lib/ggprof/lib/libggprof.so, PREFIX/bin/ggprof
 * being a link to the former; unless GGPROF_LIB says where. */
static int find_engine(char *out, size_t len) {
    return ggprof_sibling("GGPROF_LIB", (const void *) find_engine, "../lib/libggprof.so", R_OK, out, len);
}

/* OUT.db -> OUT.json.gz; any other name gets .json.gz appended. */
static void json_path_for(const char *db, char *out, size_t len) {
    size_t n = strlen(db);
    if (n > 3 && strcmp(db + n - 3, ".db") == 0) n -= 3;
    snprintf(out, len, "%.*s.json.gz", (int) n, db);
}

/* OUT.log: what a background finish says (record's end lines, its errors). */
static void log_path_for(const char *db, char *out, size_t len) { snprintf(out, len, "%s.log", db); }

/* One line per process of what was recorded: the levels that produced records, the CPU splits timed op by op and
 * with which tick model, then the engine's notes (what it turned off, and why). */
static void print_processes(sqlite3 *db, int level) {
    static const char *const sql =
        "SELECT p.pid, p.exe, p.ggml_version,"
        " (SELECT count(*) FROM graph_list g WHERE g.pid = p.pid),"
        " (SELECT count(*) FROM split_list s WHERE s.pid = p.pid),"
        " EXISTS (SELECT 1 FROM events e WHERE e.pid = p.pid AND e.type = 0),"
        " (SELECT count(*) FROM splits s JOIN backends b ON b.pid = s.pid AND b.sched_id = s.sched_id"
        "  AND b.id = s.backend_id WHERE s.pid = p.pid AND b.device_type = 0),"
        " (SELECT count(*) FROM splits s WHERE s.pid = p.pid AND s.ticks_matched = 1),"
        " (SELECT text FROM notes n WHERE n.pid = p.pid AND text LIKE 'CPU tick model %' LIMIT 1)"
        " FROM processes p ORDER BY p.pid";
    sqlite3_stmt *st = NULL, *nt = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db, "SELECT text FROM notes WHERE pid = ? AND text NOT LIKE 'CPU tick model %'", -1, &nt,
                           NULL) != SQLITE_OK) {
        ggprof_err("internal: cannot summarize the processes: %s", sqlite3_errmsg(db));
        sqlite3_finalize(st);
        return;
    }
    while (sqlite3_step(st) == SQLITE_ROW) {
        int         pid = sqlite3_column_int(st, 0);
        const char *exe = (const char *) sqlite3_column_text(st, 1), *ver = (const char *) sqlite3_column_text(st, 2);
        const char *base = exe && strrchr(exe, '/') ? strrchr(exe, '/') + 1 : exe ? exe : "?";
        int64_t graphs = sqlite3_column_int64(st, 3), splits = sqlite3_column_int64(st, 4);
        int64_t ops = sqlite3_column_int64(st, 5), cpu = sqlite3_column_int64(st, 6), matched = sqlite3_column_int64(st, 7);
        /* The engine's note reads "CPU tick model 'NAME' ...". */
        const char *note = (const char *) sqlite3_column_text(st, 8);
        const char *q = note ? strchr(note, '\'') : NULL, *q2 = q ? strchr(q + 1, '\'') : NULL;
        char levels[64], cpu_ops[160] = "", model[48] = "";
        if (q && q2) snprintf(model, sizeof(model), " (tick model %.*s)", (int) (q2 - q + 1), q);
        snprintf(levels, sizeof(levels), "%s%s%s levels", graphs ? "graph" : "", splits ? ", split" : "",
                 ops ? ", op" : "");
        if (level >= GGPROF_LEVEL_OP && cpu) {
            snprintf(cpu_ops, sizeof(cpu_ops), "; %" PRId64 " of %" PRId64 " CPU splits timed op by op%s", matched, cpu,
                     model);
        }
        char safe[1024];
        ggprof_err("pid %d %s (ggml %s): %s%s", pid, ggprof_text_safe(base, safe, sizeof(safe)), ver && *ver ? ver : "unknown",
                   graphs ? levels : "no graph computed", cpu_ops);
        sqlite3_reset(nt);
        sqlite3_bind_int(nt, 1, pid);
        while (sqlite3_step(nt) == SQLITE_ROW) {
            const char *text = (const char *) sqlite3_column_text(nt, 0);
            ggprof_err("  pid %d: %s", pid, text ? ggprof_text_safe(text, safe, sizeof(safe)) : "");
        }
    }
    sqlite3_finalize(st);
    sqlite3_finalize(nt);
}

/* The database built while the workload runs: a thread of the collector (at nice 19, as the rest of it) stores
 * each drain's frames (a round), then writes their JSON lines, while the main thread goes on draining the ring. */
#define MAX_ROUNDS 64
typedef struct {
    pthread_t       th;
    pthread_mutex_t mu;   /* guards rounds, n_rounds, stop, failed */
    pthread_cond_t  cv;
    pthread_mutex_t busy; /* held while the thread is in SQLite: a fork (a snapshot) waits for it */
    uint64_t        rounds[MAX_ROUNDS], pushed;
    int             n_rounds;
    bool            started, off, stop, failed;
    atomic_bool     cut;      /* the workload ended: the round being stored ends at its next frame */
    uint64_t        bytes_ns[2]; /* spill bytes stored and the ns it took, rounds' JSON included: the build's rate */
    /* Rounds go to the thread only while a CPU is spare (cpu_spare): /proc/stat, kept open, read at each drain
     * into stat_text, over the CPUs of record's affinity (the workload's too, unless it changes its own) */
    int             stat_fd;
    char           *stat_text;
    size_t          stat_cap;
    cpu_set_t       cpus;
    ggprof_cpu_idle idle;
    bool            spare, always; /* the last decision; every round, spare or not (GGPROF_RECORD_BUILDER=1, no /proc) */
    /* ... and within record's cgroup CPU quota, where it has one: the CPU time that cgroup used, read with /proc/stat
     * from its usage file (kept open), against the quota */
    ggprof_cgroup_cpu cg;
    int               usage_fd;
    uint64_t          usage_ns, usage_at; /* at the last reading (usage_at 0: none yet) */
    bool              quota_ok;           /* half a CPU of the quota was left between the last two readings */
} record_builder;

/* One `record` run: what the options asked for, then what each phase set up (undone by record_cleanup). */
typedef struct {
    const char *out, *level_str;
    int         level, quiet, serialize, alternate, start_paused, threads, wait;
    bool        no_sampler; /* GGPROF_RECORD_SAMPLER=0: the A/B of its cost */
    bool        no_map;     /* GGPROF_RECORD_MAP=0: claimed slots not mapped ahead (tests/bench/drain_cost.sh's A/B) */
    int         builder;    /* GGPROF_RECORD_BUILDER: 0 no round built during the run (the A/B of its cost), 1 every
                             * round, -1 (unset) the rounds while a CPU is spare */
    long        ring_kib, sample, max_mb;
    const char *snapshot_str, *metrics_str;
    ggprof_live           *live;    /* --metrics: the live aggregates and their HTTP server */
    ggprof_metrics_server *metrics;
    double      snapshot_every;
    char        snapshot[PATH_MAX];
    pid_t       snapshot_child;
    uint64_t    next_snapshot;
    int         snapshots_seen, n_snapshots;
    const char *delay_str, *duration_str;
    double      delay, duration; /* seconds; < 0: not given */
    /* capture windows (CLOCK_MONOTONIC ns): on while recording; the first opened at first_on */
    bool          on;
    uint64_t      t_start, t_on_at, t_off_at; /* t_on_at: the delay's end; t_off_at: the duration's end; 0: none */
    int           toggles_seen, n_windows_cap;
    ggprof_window *windows;
    int           n_windows;
    char      **cmd;
    char        engine[PATH_MAX], json[PATH_MAX], ring_path[PATH_MAX], spill_path[PATH_MAX];
    ggprof_store *store;   /* until the database is built */
    ggprof_json_v3_stream *json_stream; /* the JSON's records, written as the database grows; NULL: at the end */
    record_builder b;
    int            nice; /* the collector's priority before it went below the workload */
    ggprof_ring   ring;    /* mapped while ring.file */
    ggprof_spill  spill;
    bool          spill_open, out_made, keep_out;
    ggprof_outfile out_file; /* OUT.db is written under a hidden name beside it, renamed over OUT at the end */
    pid_t         child;
    int           status, exit_code;
    uint64_t      wall_start;
    int64_t       clock_real, clock_mono; /* CLOCK_REALTIME and CLOCK_MONOTONIC read together at the start */
    ggprof_proc_sampler *sampler; /* the whole run: fork to exit, rusage, threads' blocked time (proc_sample.c) */
    struct rusage ru;
    /* What the collector did with the ring while the workload ran (meta collector_*: its cost, docs/how-it-works.md
     * "Overhead"): the drains, the bytes they moved, their CPU time, and the CPU time of mapping claimed slots */
    uint64_t      drains, drained_bytes, drain_cpu_ns, map_cpu_ns;
    uint64_t      ring_bytes; /* every byte read from the ring, the end's drain included (meta ring_bytes) */
    double        defer_s;  /* the end's work, in seconds, beyond which it is finished in the background */
    int           lock_fd;  /* OUT.lock, held while the trace is finished in the background; -1: none */
} record_run;

/* OUT.db -> OUT.snapshot.db; any other name gets .snapshot.db appended. */
static void snapshot_path_for(const char *db, char *out, size_t len) {
    size_t n = strlen(db);
    if (n > 3 && strcmp(db + n - 3, ".db") == 0) n -= 3;
    snprintf(out, len, "%.*s.snapshot.db", (int) n, db);
}

/* What the flight recorder dropped, in the trace: meta keys and a note that report shows. */
static void store_flight_note(sqlite3 *db, const ggprof_spill *s, long max_mb) {
    char text[512];
    snprintf(text, sizeof(text), "flight recorder (--max-mb %ld): the oldest %.1f MB of records were dropped (%" PRIu64
             " spill segments, %" PRIu64 " graphs); the trace holds the most recent ones", max_mb,
             (double) s->dropped_bytes / (1 << 20), s->dropped_segs, s->dropped_graphs);
    /* best effort, as the rest of the trace's end: a failure was said on stderr (trace_db.h) */
    ggprof_db_note(db, 0, text);
    ggprof_db_meta_int(db, "flight_dropped_bytes", (int64_t) s->dropped_bytes);
    ggprof_db_meta_int(db, "flight_dropped_segments", (int64_t) s->dropped_segs);
    ggprof_db_meta_int(db, "flight_dropped_graphs", (int64_t) s->dropped_graphs);
}

/* What the ring lost, as data: the records the engine could not write (the ring's counters, exact), the graphs the
 * sinks' LOSS messages named (losses), the rest in one row whose graph is not known; and what a workload that wrote
 * over the ring made the collector skip. */
static void store_ring_losses(sqlite3 *db, record_run *r, uint64_t lost) {
    ggprof_db_put_lost_records(db, lost);
    char changed[128], text[512];
    bool intact = ggprof_ring_header_intact(&r->ring, changed, sizeof(changed));
    if (intact && r->ring.corrupt == 0) return;
    snprintf(text, sizeof(text), "ring header corrupted by the workload: %" PRIu64 " slots skipped%s%s%s", r->ring.corrupt,
             r->ring.corrupt ? " (their unread records lost)" : "", intact ? "" : "; fields overwritten:", changed);
    ggprof_db_note(db, 0, text);
    ggprof_db_meta_int(db, "ring_corrupt_slots", (int64_t) r->ring.corrupt);
    ggprof_err("warning: %s", text);
}

/* SEC as a number of seconds >= 0 into *out (-1 when not given); 1 after a one-line error. */
static int parse_seconds(const char *opt, const char *s, double *out) {
    *out = -1;
    if (!s) return 0;
    char *end;
    double v = strtod(s, &end);
    if (end == s || *end || !(v >= 0) || v > 1e9) {
        ggprof_fail(GGPROF_EXIT_USAGE, "%s '%s' is not a number of seconds", opt, s);
        return 1;
    }
    *out = v;
    return 0;
}

/* ---- capture windows ---- */

static void window_open(record_run *r, uint64_t now, const char *by) {
    if (r->on) return;
    if (r->n_windows == r->n_windows_cap) {
        int cap = r->n_windows_cap ? r->n_windows_cap * 2 : 8;
        ggprof_window *w = realloc(r->windows, (size_t) cap * sizeof(*w));
        if (!w) return; /* recording goes on; the window is not listed */
        r->windows       = w;
        r->n_windows_cap = cap;
    }
    r->windows[r->n_windows++] = (ggprof_window) { now, 0, by, NULL };
    r->on = true;
    atomic_fetch_and(&r->ring.file->recording, ~GGPROF_REC_COLLECTOR_OFF);
    if (r->duration > 0 && r->n_windows == 1) {
        r->t_off_at = now + (uint64_t) (r->duration * 1e9);
        atomic_store(&r->ring.file->off_at_ns, r->t_off_at); /* the engine stops there itself (ring.h) */
    }
}

static void window_close(record_run *r, uint64_t now, const char *by) {
    if (!r->on) return;
    atomic_fetch_or(&r->ring.file->recording, GGPROF_REC_COLLECTOR_OFF);
    atomic_store(&r->ring.file->off_at_ns, 0);
    r->on = false;
    if (r->n_windows && !r->windows[r->n_windows - 1].closed_by) {
        r->windows[r->n_windows - 1].end_ns    = now;
        r->windows[r->n_windows - 1].closed_by = by;
    }
}

/* What is due now: the delay's end, the duration's, SIGUSR1s. Returns the ms until the next deadline (-1: none). */
static long windows_tick(record_run *r) {
    uint64_t now = ggprof_now_ns();
    if (r->t_on_at && now >= r->t_on_at) {
        r->t_on_at = 0;
        window_open(r, now, "delay");
    }
    if (r->t_off_at && now >= r->t_off_at) {
        uint64_t end = r->t_off_at; /* where the engine stopped, however late this wake-up */
        r->t_off_at  = 0;
        window_close(r, end, "duration");
    }
    while (r->toggles_seen != g_toggles) {
        r->toggles_seen++;
        if (r->on) {
            r->t_off_at = 0; /* a signal ends the --duration window early */
            window_close(r, now, "signal");
        } else {
            r->t_on_at = 0;
            window_open(r, now, "signal");
        }
    }
    uint64_t next = r->t_on_at ? r->t_on_at : 0;
    if (r->t_off_at && (!next || r->t_off_at < next)) next = r->t_off_at;
    return next ? (long) ((next - now) / 1000000 + 1) : -1;
}

/* ---- snapshots: the trace so far, written by a child while the collector drains on ---- */

/* In a child of the collector (it only reads the spill; the parent goes on writing after the frames it saw):
 * replays the spill into a hidden file beside OUT.snapshot.db, then renames it over OUT.snapshot.db. */
static void snapshot_write(record_run *r) {
    char why[512];
    ggprof_outfile of;
    ggprof_store *st = NULL;
    int fd = ggprof_outfile_begin(&of, r->snapshot);
    if (fd < 0) _exit(1);
    close(fd);
    if (ggprof_store_create(&st, of.tmp, why, sizeof(why)) != 0) _exit(ggprof_outfile_end(&of, 0) + 1);
    ggprof_progress_quiet = true;
    r->spill.built = r->spill.desc_built = 0; /* a new store: every frame, those the parent's database holds too */
    ggprof_spill_replay(&r->spill, st, false);
    ggprof_store_meta(st, "snapshot", "1");
    sqlite3 *db = ggprof_store_finish(st, why, sizeof(why));
    if (!db) _exit(ggprof_outfile_end(&of, 0) + 1);
    uint64_t now = ggprof_now_ns();
    if (r->n_windows && r->on) r->windows[r->n_windows - 1] = (ggprof_window) { r->windows[r->n_windows - 1].start_ns, now,
                                                                                r->windows[r->n_windows - 1].opened_by, "snapshot" };
    ggprof_windows_store(db, r->windows, r->n_windows);
    if (r->spill.dropped_segs) store_flight_note(db, &r->spill, r->max_mb);
    ggprof_proc_sampler_store(r->sampler, db); /* the run so far: processes as last seen */
    sqlite3_close(db);
    _exit(ggprof_outfile_end(&of, 1) == 0 ? 0 : 1);
}

static uint64_t thread_cpu_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t) ts.tv_sec * 1000000000ull + (uint64_t) ts.tv_nsec;
}

/* A drain while the workload runs (the pacer's, a snapshot's), counted with its CPU time in the meta collector_*. */
static size_t run_drain(record_run *r) {
    uint64_t cpu0 = thread_cpu_ns();
    size_t   n    = ggprof_spill_drain(&r->spill, &r->ring);
    r->drain_cpu_ns += thread_cpu_ns() - cpu0;
    r->drained_bytes += n;
    r->ring_bytes += n;
    r->drains++;
    return n;
}

/* Starts a snapshot when one is due (--snapshot-every, SIGUSR2) and none is being written. Returns the ms until
 * the next is due (-1: none). */
static long snapshot_tick(record_run *r) {
    if (r->snapshot_child > 0 && waitpid(r->snapshot_child, NULL, WNOHANG) == r->snapshot_child) r->snapshot_child = 0;
    uint64_t now = ggprof_now_ns();
    if (r->snapshot_every > 0 && !r->next_snapshot) r->next_snapshot = now + (uint64_t) (r->snapshot_every * 1e9);
    bool asked = r->snapshots_seen != g_snapshots, due = r->next_snapshot && now >= r->next_snapshot;
    if ((asked || due) && r->snapshot_child <= 0) {
        r->snapshots_seen = g_snapshots;
        if (due) r->next_snapshot = now + (uint64_t) (r->snapshot_every * 1e9);
        while (run_drain(r) > 0) {}
    if (r->live) ggprof_live_settle(r->live, ggprof_now_ns(), 1);
        /* not while the builder is in SQLite: the child would find its locks taken */
        if (r->b.started) pthread_mutex_lock(&r->b.busy);
        pid_t c = fork();
        if (c == 0) snapshot_write(r);
        if (r->b.started) pthread_mutex_unlock(&r->b.busy);
        if (c > 0) {
            r->snapshot_child = c;
            r->n_snapshots++;
        }
    }
    if (!r->next_snapshot) return asked ? 1 : -1;
    return (long) ((r->next_snapshot > now ? r->next_snapshot - now : 0) / 1000000 + 1);
}

/* A part of the collector switched off for an A/B of what it costs the workload (docs/how-it-works.md, "Overhead"). */
static bool env_off(const char *name) {
    const char *v = getenv(name);
    return v && strcmp(v, "0") == 0;
}

static int record_parse(record_run *r, int argc, char **argv) {
    const ggprof_opt opts[] = {
        { "--output", "-o", GGPROF_OPT_STRING, &r->out, NULL, "OUT.db",
          "trace database to write (default ggprof.db); replaced if it exists (a link there is replaced too, never "
          "followed)" },
        { "--level", NULL, GGPROF_OPT_STRING, &r->level_str, NULL, "graph|split|op",
          "graph: one record per graph compute; split: also splits and copies; op: also every CPU op and the "
          "barrier waits between them (default)" },
        { "--serialize", NULL, GGPROF_OPT_FLAG, &r->serialize, NULL, NULL,
          "also time GPU backends node by node (each node computed alone, then synchronized): per-node wall time "
          "at the cost of the backend's batching; BLAS always is" },
        { "--threads", NULL, GGPROF_OPT_FLAG, &r->threads, NULL, NULL,
          "also time every thread of each CPU compute at every barrier: each op's busy and barrier wait per thread "
          "and the imbalance between threads (report's Threads); about a stamp per barrier per worker" },
        { "--alternate", NULL, GGPROF_OPT_FLAG, &r->alternate, NULL, NULL,
          "record a fixed pseudo-random half of the scheduler graphs at level graph only: adjacent graphs of the "
          "two kinds then show what the engine's per-split and per-op work costs (tests/bench/overhead_ab.sh)" },
        { "--sample", NULL, GGPROF_OPT_COUNT, &r->sample, NULL, "N",
          "record one scheduler graph in N at the level (those whose graph id N divides), the others at level "
          "graph: every graph's latency, the detail of a tenth or a hundredth" },
        { "--delay", NULL, GGPROF_OPT_STRING, &r->delay_str, NULL, "SEC",
          "start recording SEC seconds after CMD starts (a capture window opens then)" },
        { "--duration", NULL, GGPROF_OPT_STRING, &r->duration_str, NULL, "SEC",
          "stop recording SEC seconds after the first window opened; CMD runs on" },
        { "--start-paused", NULL, GGPROF_OPT_FLAG, &r->start_paused, NULL, NULL,
          "start with recording off; SIGUSR1 turns it on" },
        { "--max-mb", NULL, GGPROF_OPT_COUNT, &r->max_mb, NULL, "N",
          "flight recorder: keep the most recent N MB of records (the spill's oldest segments, of N/8 MB each, "
          "are dropped whole; node descriptions are always kept); the trace says how much was dropped (notes, "
          "meta flight_dropped_*)" },
        { "--snapshot-every", NULL, GGPROF_OPT_STRING, &r->snapshot_str, NULL, "SEC",
          "every SEC seconds, write what is recorded so far to OUT.snapshot.db (replaced whole each time) while "
          "CMD runs on; report, export and query read it. SIGUSR2 sent to this process writes one now. Removed "
          "once CMD ends and OUT is written" },
        { "--ring-kib", NULL, GGPROF_OPT_COUNT, &r->ring_kib, NULL, "N",
          "ring size per producing thread in KiB, a power of two (default 4096; each thread writes its whole ring "
          "once, when it first records). While CMD runs, a thread's records are copied out once they fill a "
          "quarter of it, which takes a CPU for a few ms from a workload that keeps every CPU busy: a ring four "
          "times the size of a run's records keeps that out of the run. When the workload outruns the collector, "
          "records are dropped and counted" },
        { "--metrics", NULL, GGPROF_OPT_STRING, &r->metrics_str, NULL, "[HOST:]PORT",
          "while CMD runs, serve live totals at http://HOST:PORT/metrics for Prometheus and 'ggprof top' (HOST "
          "defaults to 127.0.0.1; PORT 0 picks a free port, printed on stderr; docs/metrics.md)" },
        { "--wait", NULL, GGPROF_OPT_FLAG, &r->wait, NULL, NULL,
          "finish OUT and its JSON before exiting, however long that takes (also GGPROF_RECORD_WAIT=1): for scripts "
          "that read them with other tools at once. Without it, when what is left to store as CMD ends would take "
          "more than about a second (GGPROF_RECORD_DEFER_S), record exits with CMD's status and a background process "
          "finishes them, holding OUT.lock until both are whole (ggprof commands wait for it; its lines in OUT.log)" },
        { "--quiet", "-q", GGPROF_OPT_FLAG, &r->quiet, NULL, NULL, "print nothing but errors" },
    };
    ggprof_args a = { opts, (int) (sizeof(opts) / sizeof(opts[0])), NULL, 0, 0, NULL, 1, 0, NULL };
    int rc = ggprof_parse_args(argc, argv, &a);
    if (rc) return rc;
    if ((r->level = parse_level(r->level_str)) < 0) {
        return ggprof_fail(GGPROF_EXIT_USAGE, "--level '%s' is not a level; expected graph, split or op", r->level_str);
    }
    if (r->ring_kib < 4 || r->ring_kib > (1 << 20) || (r->ring_kib & (r->ring_kib - 1))) {
        return ggprof_fail(GGPROF_EXIT_USAGE, "--ring-kib '%ld' is not a power of two from 4 to 1048576", r->ring_kib);
    }
    if (r->sample > 65535) return ggprof_fail(GGPROF_EXIT_USAGE, "--sample '%ld' is more than 65535", r->sample);
    if (parse_seconds("--delay", r->delay_str, &r->delay) || parse_seconds("--duration", r->duration_str, &r->duration) ||
        parse_seconds("--snapshot-every", r->snapshot_str, &r->snapshot_every)) {
        return GGPROF_EXIT_USAGE;
    }
    if (r->snapshot_every == 0) return ggprof_fail(GGPROF_EXIT_USAGE, "--snapshot-every '%s': needs a period above 0", r->snapshot_str);
    if (r->max_mb > (1L << 30)) return ggprof_fail(GGPROF_EXIT_USAGE, "--max-mb '%ld' is too large", r->max_mb);
    if (r->duration == 0) return ggprof_fail(GGPROF_EXIT_USAGE, "--duration '%s': a window needs a duration above 0", r->duration_str);
    if (r->start_paused && r->delay >= 0) {
        return ggprof_fail(GGPROF_EXIT_USAGE, "--start-paused and --delay both say when to start; give one");
    }
    if (a.next >= argc) {
        return ggprof_fail(GGPROF_EXIT_USAGE, "no command to run; usage: ggprof record [OPTIONS] -- CMD [ARGS...]");
    }
    r->cmd = argv + a.next;
    const char *bv = getenv("GGPROF_RECORD_BUILDER");
    r->builder = !bv ? -1 : strcmp(bv, "0") == 0 ? 0 : strcmp(bv, "1") == 0 ? 1 : -1;
    r->no_sampler = env_off("GGPROF_RECORD_SAMPLER");
    r->no_map     = env_off("GGPROF_RECORD_MAP");
    const char *w = getenv("GGPROF_RECORD_WAIT"), *d = getenv("GGPROF_RECORD_DEFER_S");
    if (w && strcmp(w, "1") == 0) r->wait = 1;
    r->defer_s = 1;
    if (d && *d && parse_seconds("GGPROF_RECORD_DEFER_S", d, &r->defer_s)) return GGPROF_EXIT_USAGE;
    return 0;
}

static void tap_live(int32_t pid, const void *bytes, size_t n, void *user) { ggprof_live_chunk(user, pid, bytes, n); }

/* --metrics: the live aggregates, fed by every drain, and the server that shows them; listening before CMD starts,
 * so that an address already taken is a mistake reported before anything runs. */
static int record_metrics_start(record_run *r) {
    char bound[300], why[512];
    if (!(r->live = ggprof_live_new())) return ggprof_fail(GGPROF_EXIT_INTERNAL, "out of memory");
    int rc = ggprof_metrics_listen(&r->metrics, r->metrics_str, r->live, bound, sizeof(bound), why, sizeof(why));
    if (rc != 0) return ggprof_fail(GGPROF_EXIT_USAGE, "%s", why);
    r->spill.tap      = tap_live;
    r->spill.tap_user = r->live;
    /* Printed even with -q: a test or a script that asked for port 0 reads it here. */
    fprintf(stderr, "ggprof: record: metrics at http://%s/metrics\n", bound);
    return 0;
}

/* The engine, the output (a bad -o is a user mistake, reported before anything runs), the store, the ring. */
static int record_prepare(record_run *r) {
    if (find_engine(r->engine, sizeof(r->engine)) != 0) {
        return ggprof_fail(GGPROF_EXIT_INTERNAL, "cannot find the engine '%s' (set GGPROF_LIB or run 'make')", r->engine);
    }
    json_path_for(r->out, r->json, sizeof(r->json));
    ggprof_trace_wait(r->out); /* a background finish of the same output first */
    /* The spill beside the output, locked first: a second record writing the same output stops here, before it
     * touches anything of the first's. */
    snprintf(r->spill_path, sizeof(r->spill_path), "%s.spill", r->out);
    int sp = ggprof_spill_open(&r->spill, r->spill_path);
    if (sp == -2) return ggprof_fail(GGPROF_EXIT_USAGE, "another 'ggprof record' is writing '%s' now; choose another -o", r->out);
    if (sp == -3) return ggprof_fail(GGPROF_EXIT_USAGE, "'%s' belongs to another user; choose another -o", r->spill_path);
    if (sp != 0) return ggprof_fail(GGPROF_EXIT_USAGE, "cannot write '%s': %s", r->spill_path, strerror(errno));
    r->spill_open = true;
    /* ours now: a lock or a log left by a background finish that died says nothing of this trace */
    char left[PATH_MAX + 8];
    snprintf(left, sizeof(left), "%s.lock", r->out);
    unlink(left);
    log_path_for(r->out, left, sizeof(left));
    unlink(left);
    if (r->max_mb > 0 && ggprof_spill_bound(&r->spill, r->spill_path, (uint64_t) r->max_mb << 20) != 0) {
        return ggprof_fail(GGPROF_EXIT_USAGE, "cannot write '%s.0': %s", r->spill_path, strerror(errno));
    }
    int mrc = r->metrics_str ? record_metrics_start(r) : 0;
    if (mrc) return mrc;
    snapshot_path_for(r->out, r->snapshot, sizeof(r->snapshot));
    /* A file (or a link: replaced, never followed) at OUT makes way for the new trace; anything else is a mistake. */
    struct stat st;
    if (lstat(r->out, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode)) {
        return ggprof_fail(GGPROF_EXIT_USAGE, "cannot write '%s': not a regular file", r->out);
    }
    int ofd = ggprof_outfile_begin(&r->out_file, r->out);
    if (ofd < 0) return ggprof_fail(GGPROF_EXIT_USAGE, "cannot write '%s': %s", r->out, strerror(errno));
    close(ofd);
    r->out_made = true;
    char why[512];
    if (ggprof_store_create(&r->store, r->out_file.tmp, why, sizeof(why)) != 0) return ggprof_fail(GGPROF_EXIT_USAGE, "%s", why);
    ggprof_ring_sweep(); /* rings of collectors that were killed: memory no one will read */
    ggprof_ring_temp_path(r->ring_path, sizeof(r->ring_path), "record");
    if (ggprof_ring_create(&r->ring, r->ring_path, 64, (uint64_t) r->ring_kib * 1024, (uint32_t) r->level) != 0) {
        return ggprof_fail(GGPROF_EXIT_INTERNAL, "cannot create the ring '%s': %s", r->ring_path, strerror(errno));
    }
    r->ring.file->flags = (r->serialize ? GGPROF_RING_SERIALIZE : 0) | (r->alternate ? GGPROF_RING_ALTERNATE : 0) |
                          (uint32_t) r->sample << GGPROF_RING_SAMPLE_SHIFT;
    /* Off until the first window opens (record_start_child opens it, or the delay's end, or SIGUSR1). */
    atomic_fetch_or(&r->ring.file->recording, GGPROF_REC_COLLECTOR_OFF);
    struct sigaction usr = { 0 };
    usr.sa_handler = on_sigusr1;
    sigemptyset(&usr.sa_mask);
    usr.sa_flags = SA_RESTART;
    sigaction(SIGUSR1, &usr, NULL);
    usr.sa_handler = on_sigusr2;
    sigaction(SIGUSR2, &usr, NULL);
    ggprof_progress_quiet = r->quiet;
    if (getenv("GGML_PROFILE") && !r->quiet) {
        ggprof_err("note: GGML_PROFILE=%s is ignored under 'ggprof record'", getenv("GGML_PROFILE"));
    }
    return 0;
}

/* Starts the command with the engine injected; fails (a user mistake) when it cannot be run. */
static int record_start_child(record_run *r) {
    /* A pipe that closes on exec tells the parent whether the command started. */
    int pfd[2];
    if (pipe2(pfd, O_CLOEXEC) != 0) return ggprof_fail(GGPROF_EXIT_INTERNAL, "pipe: %s", strerror(errno));
    struct sigaction sa = { 0 };
    sa.sa_handler = forward_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    int sigs[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT };
    for (size_t k = 0; k < sizeof(sigs) / sizeof(sigs[0]); k++) sigaction(sigs[k], &sa, NULL);

    r->wall_start = (uint64_t) time(NULL);
    struct timespec real;
    clock_gettime(CLOCK_REALTIME, &real);
    r->t_start    = ggprof_now_ns();
    r->clock_real = (int64_t) real.tv_sec * 1000000000 + real.tv_nsec;
    r->clock_mono = (int64_t) r->t_start;
    if (r->delay > 0) {
        r->t_on_at = r->t_start + (uint64_t) (r->delay * 1e9);
    } else if (!r->start_paused) {
        window_open(r, r->t_start, "start");
    }
    uint64_t fork_ns = ggprof_now_ns();
    pid_t child = fork();
    if (child < 0) return ggprof_fail(GGPROF_EXIT_INTERNAL, "fork: %s", strerror(errno));
    if (child == 0) {
        close(pfd[0]);
        const char *pre = getenv("LD_PRELOAD");
        char preload[PATH_MAX * 3];
#ifdef GGPROF_SAN_RUNTIME
        /* A sanitized build (make SAN=...): the program is not instrumented, so the sanitizer's runtime must be
         * loaded before libggprof.so. Leaks are checked in ggprof, not in the profiled program (its allocations and
         * ggml's are not ggprof's to judge). */
        snprintf(preload, sizeof(preload), "%s:%s%s%s", GGPROF_SAN_RUNTIME, r->engine, pre && *pre ? ":" : "",
                 pre && *pre ? pre : "");
        const char *asan = getenv("ASAN_OPTIONS");
        char asan_opts[1024];
        snprintf(asan_opts, sizeof(asan_opts), "%s%sdetect_leaks=0", asan && *asan ? asan : "", asan && *asan ? ":" : "");
        setenv("ASAN_OPTIONS", asan_opts, 1);
#else
        snprintf(preload, sizeof(preload), "%s%s%s", r->engine, pre && *pre ? ":" : "", pre && *pre ? pre : "");
#endif
        setenv("LD_PRELOAD", preload, 1);
        setenv("GGPROF_RING", r->ring_path, 1);
        if (r->threads) setenv("GGPROF_THREADS", "1", 1);
        unsetenv("GGML_PROFILE");
        execvp(r->cmd[0], r->cmd);
        int e = errno;
        if (write(pfd[1], &e, sizeof(e)) < 0) _exit(127);
        _exit(127);
    }
    r->child = g_child = child;
    r->sampler = ggprof_proc_sampler_new(child, fork_ns, 5);
    close(pfd[1]);
    /* Below the workload: the collector's wake-ups should not preempt threads that spin in ggml's barriers. */
    errno   = 0;
    r->nice = getpriority(PRIO_PROCESS, 0);
    if (errno) r->nice = 19;
    if (setpriority(PRIO_PROCESS, 0, 19) != 0) { /* not fatal: only the overhead is higher */ }
    int exec_errno = 0;
    ssize_t got = read(pfd[0], &exec_errno, sizeof(exec_errno));
    close(pfd[0]);
    if (got == (ssize_t) sizeof(exec_errno)) {
        waitpid(child, &r->status, 0);
        r->child = g_child = 0;
        return ggprof_fail(GGPROF_EXIT_USAGE, "cannot run '%s': %s", r->cmd[0], strerror(exec_errno));
    }
    return 0;
}

/* While the command runs, a slot is only drained once it is a quarter full: a short run is not touched at all, a
 * long one every second or so (the ring lives in shared memory: a command that crashes or is killed leaves it
 * whole, and it is read to the end here). The sleep ends early when a thread of the command ends (its slot is
 * freed for the next one), when a slot passes half full (the engine pokes the ring) and when the command does
 * (SIGCHLD pokes the ring). The spill file (record_prepare)
 * sits beside the output: if the collector itself dies, what it had drained is there. */
static void *builder_main(void *arg) {
    record_run     *r = arg;
    record_builder *b = &r->b;
    pthread_mutex_lock(&b->mu);
    for (;;) {
        while (!b->n_rounds && !b->stop) pthread_cond_wait(&b->cv, &b->mu);
        if (b->stop) break; /* the rounds not built yet are built at the end, with what the ring still holds */
        uint64_t end = b->rounds[0];
        pthread_mutex_unlock(&b->mu);
        pthread_mutex_lock(&b->busy);
        uint64_t t0 = ggprof_now_ns(), from = r->spill.built;
        int rc = ggprof_spill_build(&r->spill, r->store, end, &b->cut);
        /* a round cut short leaves its JSON to the end, which writes every record after the last one written */
        if (rc == 0 && r->json_stream && !atomic_load(&b->cut)) {
            ggprof_json_v3_stream_add(r->json_stream, ggprof_store_db(r->store));
        }
        b->bytes_ns[0] += r->spill.built - from;
        b->bytes_ns[1] += ggprof_now_ns() - t0;
        pthread_mutex_unlock(&b->busy);
        pthread_mutex_lock(&b->mu);
        memmove(b->rounds, b->rounds + 1, (size_t) --b->n_rounds * sizeof(b->rounds[0]));
        if (rc != 0) {
            b->failed = true;
            break;
        }
    }
    pthread_mutex_unlock(&b->mu);
    return NULL;
}

static void builder_stat_close(record_builder *b) {
    if (b->stat_fd >= 0) close(b->stat_fd);
    if (b->usage_fd >= 0) close(b->usage_fd);
    b->stat_fd = b->usage_fd = -1;
    free(b->stat_text);
    b->stat_text = NULL;
}

/* Reads the cgroup's CPU time (where record's cgroup has a quota whose use it can read): quota_ok says whether
 * half a CPU of the quota was left unused since the last reading. */
static void quota_update(record_builder *b) {
    char     t[1024];
    uint64_t used, now = ggprof_now_ns();
    ssize_t  n = b->usage_fd >= 0 ? pread(b->usage_fd, t, sizeof(t) - 1, 0) : -1;
    if (n <= 0) return;
    t[n] = 0;
    if (!ggprof_cgroup_usage_parse(t, b->cg.v2, &used)) return;
    const uint64_t shortest = 10 * 1000000ull; /* a shorter interval keeps the last decision, as /proc/stat's */
    if (b->usage_at && now - b->usage_at < shortest) return;
    if (b->usage_at && used >= b->usage_ns) {
        double cpus = (double) (used - b->usage_ns) / (double) (now - b->usage_at); /* the cgroup's, on average */
        b->quota_ok = b->cg.quota - cpus >= 0.5;
    }
    b->usage_ns = used;
    b->usage_at = now;
}

/* Whether a CPU was spare since the last drain: at least half a CPU idle on average, and half a CPU of the cgroup's
 * quota unused where it has one. A reading too close to the last one keeps the last decision (at first: none
 * spare). Where the workload's threads keep every CPU busy (ggml spinning at its barriers, as many threads as CPUs),
 * the rounds wait, and the end stores them, deferred to the background when that takes more than a second: nothing
 * takes a slice of a CPU a ggml thread wants meanwhile. */
static bool cpu_spare(record_builder *b) {
    if (b->always) return true;
    ssize_t n = pread(b->stat_fd, b->stat_text, b->stat_cap - 1, 0);
    if (n <= 0) return b->spare;
    b->stat_text[n] = 0;
    double idle = ggprof_cpu_idle_update(&b->idle, b->stat_text, &b->cpus);
    quota_update(b);
    if (idle >= 0) b->spare = idle >= 0.5 && b->quota_ok;
    return b->spare;
}

/* Starts the builder (the collector is at nice 19 by now: its threads, and the JSON's compressing ones, are too).
 * A flight recorder's database is built at the end, as its oldest records may still go; so is its JSON. */
static void builder_start(record_run *r) {
    record_builder *b = &r->b;
    if (r->max_mb > 0 || r->builder == 0) return;
    pthread_mutex_init(&b->mu, NULL);
    pthread_mutex_init(&b->busy, NULL);
    pthread_cond_init(&b->cv, NULL);
    r->json_stream = ggprof_json_v3_stream_open(r->json);
    long nc      = sysconf(_SC_NPROCESSORS_CONF);
    b->stat_cap  = 256 * (size_t) (nc > 0 ? nc + 1 : 2); /* the "cpu" lines come first, each under 256 bytes */
    b->stat_text = r->builder == 1 ? NULL : malloc(b->stat_cap);
    b->stat_fd   = b->stat_text ? open("/proc/stat", O_RDONLY | O_CLOEXEC) : -1;
    if (sched_getaffinity(0, sizeof(b->cpus), &b->cpus) != 0) CPU_ZERO(&b->cpus);
    b->always = b->stat_fd < 0 || !CPU_COUNT(&b->cpus); /* no /proc: as before, every round */
    ggprof_cgroup_cpu_find(getpid(), &b->cg);
    b->usage_fd = b->always || b->cg.quota <= 0 || !b->cg.usage[0] ? -1 : open(b->cg.usage, O_RDONLY | O_CLOEXEC);
    b->quota_ok = b->usage_fd < 0; /* a quota whose use cannot be read is not counted */
    cpu_spare(b); /* the first reading */
    b->started = pthread_create(&b->th, NULL, builder_main, r) == 0;
    if (!b->started) builder_stat_close(b);
}

/* The spill's frames up to here are one round more for the builder; none from the moment the spill cannot be built
 * during the run (a disk short of room): from there on it all waits for the end, in order. */
static void builder_push(record_run *r) {
    record_builder *b = &r->b;
    if (!b->started || b->off || r->spill.good_end == b->pushed) return;
    if (!cpu_spare(b)) return;
    if (!ggprof_spill_can_build(&r->spill)) {
        b->off = true;
        return;
    }
    pthread_mutex_lock(&b->mu);
    if (b->n_rounds == MAX_ROUNDS) b->n_rounds--; /* the newest two rounds become one */
    b->rounds[b->n_rounds++] = b->pushed = r->spill.good_end;
    pthread_cond_signal(&b->cv);
    pthread_mutex_unlock(&b->mu);
}

/* Stops the builder at the next frame of the round it is storing, if any: the end goes on from there. */
static void builder_stop(record_run *r) {
    record_builder *b = &r->b;
    if (!b->started) return;
    atomic_store(&b->cut, true);
    pthread_mutex_lock(&b->mu);
    b->stop = true;
    pthread_cond_signal(&b->cv);
    pthread_mutex_unlock(&b->mu);
    pthread_join(b->th, NULL);
    b->started = false;
    builder_stat_close(b);
    if (b->failed) ggprof_err("internal: cannot read back '%s'", r->spill_path);
}

/* A thread that began to record: the sampler follows it from its first record (ggprof_ring_new_owners). */
static void follow_thread(int32_t pid, int32_t tid, void *sampler) {
    ggprof_proc_sampler_follow(sampler, (pid_t) pid, (pid_t) tid, ggprof_now_ns());
}

static int record_drain(record_run *r) {
    g_poke_ring = &r->ring;
    struct sigaction chld = { 0 };
    chld.sa_handler = on_sigchld;
    sigemptyset(&chld.sa_mask);
    chld.sa_flags = SA_RESTART | SA_NOCLDSTOP;
    sigaction(SIGCHLD, &chld, NULL);
    ggprof_ring_pacer pacer = { 0, 0, 0 };
    uint32_t computing = 0; /* the ring's count of processes that began to compute graphs, as last seen */
    builder_start(r);
    for (;;) {
        uint32_t seen = ggprof_ring_wake_seen(&r->ring);
        pid_t w = wait4(r->child, &r->status, WNOHANG, &r->ru);
        if (w == r->child) ggprof_proc_sampler_exit(r->sampler, ggprof_now_ns(), r->status, &r->ru);
        if (w == r->child || (w < 0 && errno != EINTR)) break;
        long ms = 0, due = windows_tick(r), snap = snapshot_tick(r);
        if (snap >= 0 && (due < 0 || snap < due)) due = snap;
        /* the new owners first: reading one of their /proc files costs a few us, mapping a slot's pages at nice 19
         * may take longer than a short thread lives */
        if (!r->no_sampler) ggprof_ring_new_owners(&r->ring, follow_thread, r->sampler);
        uint64_t cpu0 = thread_cpu_ns();
        if (!r->no_map && ggprof_ring_map_claimed(&r->ring)) r->map_cpu_ns += thread_cpu_ns() - cpu0;
        /* --metrics: every wake-up drains, at least 4 a second, so that a scrape is at most that late */
        if (ggprof_ring_pace(&pacer, &r->ring, r->live ? 0 : r->ring.slot_cap / 4, r->live ? 250 : 1000, &ms)) {
            run_drain(r);
            if (r->live) ggprof_live_settle(r->live, ggprof_now_ns(), 0);
            builder_push(r);
        }
        if (due >= 0 && due < ms) ms = due;
        /* busy: graphs compute (records arrived since the last wake-up, or a process's first graph began) */
        uint32_t began = atomic_load_explicit(&r->ring.file->computing, memory_order_relaxed);
        bool     busy  = pacer.grew > 0 || began != computing;
        computing      = began;
        long sample = r->no_sampler ? -1 : ggprof_proc_sampler_tick(r->sampler, ggprof_now_ns(), busy);
        if (sample >= 0 && sample < ms) ms = sample;
        if (r->toggles_seen == g_toggles) ggprof_ring_wait(&r->ring, seen, ms);
    }
    builder_stop(r);
    /* The workload has ended: what is left is what its user waits for, at the priority record started with where
     * that is allowed (raising it again needs CAP_SYS_NICE or RLIMIT_NICE; otherwise it stays at nice 19, as before).
     * The JSON's compressing threads, started from here, take it too. */
    if (setpriority(PRIO_PROCESS, 0, r->nice) != 0) { /* not fatal: the end only takes longer on a busy machine */ }
    if (r->snapshot_child > 0) waitpid(r->snapshot_child, NULL, 0); /* the last snapshot is whole, then replaced */
    r->snapshot_child = 0;
    signal(SIGCHLD, SIG_DFL);
    g_poke_ring = NULL;
    windows_tick(r);
    window_close(r, ggprof_now_ns(), "exit");
    r->child = g_child = 0;
    /* Whatever reached the ring before the end, a SIGKILL included, is still there: read it all. */
    for (size_t n; (n = ggprof_spill_drain(&r->spill, &r->ring)) > 0;) r->ring_bytes += n;
    if (r->live) ggprof_live_settle(r->live, ggprof_now_ns(), 1);
    r->exit_code = WIFEXITED(r->status) ? WEXITSTATUS(r->status) : WIFSIGNALED(r->status) ? 128 + WTERMSIG(r->status) : 1;
    return 0;
}

/* The end's rate when the builder measured none (it stored under 50 ms of rounds: a short run, a burst, --max-mb):
 * spill bytes a second, storing and the JSON: about 430k records of 25 bytes (llama-bench at level op, 2-CPU VM). */
#define DEFAULT_BUILD_RATE (10.0 * (1 << 20))

/* The workload has ended and the ring is in the spill. What the builder had not stored is stored here when that
 * takes about defer_s (1 s) or less at the builder's rate; else by a background process, a grandchild in a session
 * of its own (the terminal's ^C and hang-up do not reach it), its stderr in OUT.log, that holds OUT.lock until OUT
 * and its JSON are whole: readers wait on it (ggprof_trace_wait). The old OUT and JSON go first, so that no reader
 * takes them for the new ones. Returns 1 in the process that is to exit now, 0 to go on (nothing deferred, or the
 * background process). */
static int record_defer(record_run *r) {
    if (r->wait || !r->store) return 0;
    const record_builder *b = &r->b;
    double rate = b->bytes_ns[1] > 50000000 && b->bytes_ns[0] ? b->bytes_ns[0] / (b->bytes_ns[1] / 1e9) : DEFAULT_BUILD_RATE;
    double left = (double) ggprof_spill_unbuilt(&r->spill) / rate;
    if (left <= r->defer_s) return 0;
    char log[PATH_MAX + 8];
    log_path_for(r->out, log, sizeof(log));
    ggprof_metrics_stop(r->metrics); /* its threads would not be in the child */
    r->metrics   = NULL;
    r->spill.tap = NULL;
    ggprof_store_commit(r->store); /* no SQLite lock held across the fork (a full disk is said at the end) */
    ggprof_json_v3_stream_pause(r->json_stream); /* nor a compressing thread */
    int pfd[2] = { -1, -1 }, log_fd = -1;
    if ((r->lock_fd = ggprof_trace_lock_take(r->out)) < 0 || (log_fd = ggprof_private_create(log, O_WRONLY)) < 0 ||
        pipe2(pfd, O_CLOEXEC) != 0) {
        goto here;
    }
    fflush(NULL); /* nothing buffered is written twice */
    pid_t mid = fork();
    if (mid == 0) {
        pid_t bg = setsid() < 0 ? -1 : fork();
        if (bg != 0) _exit(bg < 0);
        pid_t self = getpid();
        ggprof_trace_lock_owner(r->lock_fd, self);
        int null = open("/dev/null", O_RDWR | O_CLOEXEC);
        if (null >= 0) dup2(null, 0), dup2(null, 1);
        dup2(log_fd, 2);
        if (write(pfd[1], &self, sizeof(self)) != (ssize_t) sizeof(self)) _exit(1);
        close(pfd[1]);
        int sigs[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT };
        for (size_t k = 0; k < sizeof(sigs) / sizeof(sigs[0]); k++) signal(sigs[k], SIG_DFL); /* no child to forward to */
        signal(SIGUSR1, SIG_IGN), signal(SIGUSR2, SIG_IGN);
        ggprof_progress_quiet = true;
        return 0;
    }
    close(pfd[1]);
    pfd[1] = -1;
    pid_t bg = 0;
    bool  ok = mid > 0 && waitpid(mid, NULL, 0) == mid && read(pfd[0], &bg, sizeof(bg)) == (ssize_t) sizeof(bg);
    close(pfd[0]);
    if (!ok) goto here;
    close(log_fd);
    unlink(r->out);
    unlink(r->json);
    if (!r->quiet) {
        char o[1024], j[1024], l[1024];
        ggprof_err("finishing the trace in the background (pid %d): '%s' and '%s' are complete when it exits, in "
                   "about %.0f s (its lines in '%s'); ggprof commands wait for it", (int) bg,
                   ggprof_text_safe(r->out, o, sizeof(o)), ggprof_text_safe(r->json, j, sizeof(j)), left < 1 ? 1 : left,
                   ggprof_text_safe(log, l, sizeof(l)));
    }
    return 1;
here: /* cannot defer: finished here, as with --wait */
    for (int i = 0; i < 2; i++) {
        if (pfd[i] >= 0) close(pfd[i]);
    }
    if (log_fd >= 0) close(log_fd), unlink(log);
    ggprof_trace_lock_drop(r->lock_fd, r->out);
    r->lock_fd = -1;
    return 0;
}

/* What the builder had not stored when the workload ended (here, or in the background process). */
static int record_build(record_run *r) {
    if (ggprof_spill_replay(&r->spill, r->store, true) != 0) ggprof_err("internal: cannot read back '%s'", r->spill_path);
    return 0;
}

/* The disk filled (while the records were copied out, or while the database was built): one line says so, and the
 * counts become what the trace really holds, the records written before. */
static void record_disk_full(record_run *r, sqlite3 *db, ggprof_store_counts *c) {
    static const char *const k_count[] = { "SELECT count(*) FROM events", "SELECT count(*) FROM graph_list",
                                           "SELECT count(*) FROM split_list", "SELECT count(*) FROM processes" };
    uint64_t *dst[] = { &c->events, &c->graphs, &c->splits, &c->processes };
    for (int i = 0; i < 4; i++) {
        sqlite3_stmt *st = NULL;
        *dst[i] = 0;
        if (sqlite3_prepare_v2(db, k_count[i], -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW) {
            *dst[i] = (uint64_t) sqlite3_column_int64(st, 0);
        }
        sqlite3_finalize(st);
    }
    char note[512];
    snprintf(note, sizeof(note), "the disk of '%s' filled up (%s): the trace keeps the %" PRIu64 " graphs recorded before it, "
             "the rest is lost; no JSON written", r->out, r->spill.err ? strerror(r->spill.err) : sqlite3_errstr(c->full),
             c->graphs);
    ggprof_err("warning: %s", note);
    /* In the trace too (best effort: a row of text may still fit), where report shows its notes. */
    ggprof_db_note(db, 0, note);
}

/* What `ggprof try` needs to run the command again as it ran here, and to tell whether the trace is the user's own
 * (docs/try.md): argv as a JSON array (the command line `command` joins them with spaces and cannot be split back),
 * the working directory, the environment variables a rerun needs (schema/rerun_env.h: never the whole environment)
 * as a JSON object, and who recorded it where: uid, hostname and /etc/machine-id. */
static void record_rerun_meta(record_run *r) {
    char  *buf = NULL;
    size_t len = 0;
    FILE  *f   = open_memstream(&buf, &len);
    if (f) {
        fputc('[', f);
        for (char **a = r->cmd; *a; a++) {
            if (a != r->cmd) fputs(", ", f);
            ggprof_json_put(f, *a, 0);
        }
        fputc(']', f);
        if (fclose(f) == 0) ggprof_store_meta(r->store, "argv", buf);
        free(buf);
    }
    buf = NULL;
    if ((f = open_memstream(&buf, &len))) {
        extern char **environ;
        int n = 0;
        fputc('{', f);
        for (char **e = environ; *e; e++) {
            const char *eq = strchr(*e, '=');
            if (!eq || !ggprof_rerun_env_kept(*e, (size_t) (eq - *e))) continue;
            char name[256];
            snprintf(name, sizeof(name), "%.*s", (int) (eq - *e), *e);
            fputs(n++ ? ", " : "", f);
            ggprof_json_put(f, name, 0);
            fputs(": ", f);
            ggprof_json_put(f, eq + 1, 0);
        }
        fputc('}', f);
        if (fclose(f) == 0) ggprof_store_meta(r->store, "env", buf);
        free(buf);
    }
    char path[PATH_MAX];
    if (getcwd(path, sizeof(path))) ggprof_store_meta(r->store, "cwd", path);
    snprintf(path, sizeof(path), "%u", (unsigned) getuid());
    ggprof_store_meta(r->store, "uid", path);
    if (gethostname(path, sizeof(path) - 1) == 0) {
        path[sizeof(path) - 1] = '\0';
        ggprof_store_meta(r->store, "hostname", path);
    }
    FILE *mid = fopen("/etc/machine-id", "r");
    if (mid) {
        if (fgets(path, 64, mid)) {
            path[strcspn(path, "\n")] = '\0';
            if (*path) ggprof_store_meta(r->store, "machine_id", path);
        }
        fclose(mid);
    }
}

/* The trace's metadata, the database, the JSON, and what record says of the run. */
static int record_finish(record_run *r) {
    uint64_t dropped    = ggprof_ring_dropped_records(&r->ring);
    uint64_t messages   = ggprof_ring_dropped(&r->ring);
    uint64_t noslot     = atomic_load(&r->ring.file->noslot_records); /* threads that found every slot taken */
    uint32_t n_slots    = r->ring.n_slots;
    uint32_t n_attached = atomic_load(&r->ring.file->n_processes);
    char cmdline[4096] = "", why[512];
    size_t cmdlen = 0;
    for (char **a = r->cmd; *a && cmdlen < sizeof(cmdline); a++) {
        cmdlen += (size_t) snprintf(cmdline + cmdlen, sizeof(cmdline) - cmdlen, "%s%s", a == r->cmd ? "" : " ", *a);
    }
    /* The run's meta keys (docs/trace-database.md, "Tables"), one line each. */
    ggprof_store_meta(r->store, "command", cmdline);
    record_rerun_meta(r);
    ggprof_store_meta(r->store, "level", level_name(r->level));
    ggprof_store_meta_int(r->store, "exit_status", r->exit_code);
    ggprof_store_meta_int(r->store, "dropped_records", (int64_t) dropped); /* records since the losses table; messages before */
    ggprof_store_meta_int(r->store, "dropped_messages", (int64_t) messages);
    ggprof_store_meta_int(r->store, "started_unix", (int64_t) r->wall_start);
    ggprof_store_meta_int(r->store, "clock_realtime_ns", r->clock_real);
    ggprof_store_meta_int(r->store, "clock_monotonic_ns", r->clock_mono);
    ggprof_store_meta_int(r->store, "collector_drains", (int64_t) r->drains);
    ggprof_store_meta_int(r->store, "collector_drained_bytes", (int64_t) r->drained_bytes);
    ggprof_store_meta_int(r->store, "collector_drain_cpu_ns", (int64_t) r->drain_cpu_ns);
    ggprof_store_meta_int(r->store, "collector_map_cpu_ns", (int64_t) r->map_cpu_ns);
    ggprof_store_meta_int(r->store, "ring_bytes", (int64_t) r->ring_bytes);
    ggprof_store_commit(r->store); /* a full disk shows here at the latest */
    ggprof_store_counts c = ggprof_store_get_counts(r->store);
    r->keep_out = true;
    sqlite3 *db = ggprof_store_finish(r->store, why, sizeof(why));
    r->store    = NULL;
    if (!db) {
        ggprof_err("%s", why);
        ggprof_outfile_end(&r->out_file, 1);
        return r->exit_code ? 0 : GGPROF_EXIT_INTERNAL;
    }
    bool full = r->spill.err || c.full;
    if (full) record_disk_full(r, db, &c);
    store_ring_losses(db, r, dropped);
    if (ggprof_windows_store(db, r->windows, r->n_windows) != 0) ggprof_err("internal: cannot store the capture windows");
    if (r->spill.dropped_segs) store_flight_note(db, &r->spill, r->max_mb);
    if (!full && ggprof_proc_sampler_store(r->sampler, db) != 0) {
        ggprof_err("internal: cannot store the run's times: %s", sqlite3_errmsg(db));
    }
    int json_ok = 0;
    if (full) {
        unlink(r->json);
    } else {
        json_ok = ggprof_json_v3_export_stream(db, r->json, r->json_stream, why, sizeof(why));
    }
    if (!r->quiet && !full && c.processes) print_processes(db, r->level);
    ggprof_json_v3_stream_free(r->json_stream);
    r->json_stream = NULL;
    if (r->n_snapshots) unlink(r->snapshot); /* the whole trace is in OUT now */
    sqlite3_close(db);
    if (ggprof_outfile_end(&r->out_file, 1) != 0) {
        ggprof_err("cannot write '%s': %s", r->out, strerror(errno));
        return GGPROF_EXIT_INTERNAL;
    }
    if (json_ok != 0) ggprof_err("%s", why);
    if (r->quiet && !full) return 0;
    if (full) {
        /* record_disk_full said it all, in one line */
    } else if (c.processes == 0) {
        ggprof_err("no ggml activity was seen in '%s'%s; '%s' holds an empty trace", r->cmd[0],
                   n_attached ? "" : " (no process loaded ggml)", r->out);
    } else {
        ggprof_err("%" PRIu64 " records, %" PRIu64 " graphs, %" PRIu64 " splits from %" PRIu64 " process%s in '%s' and '%s'",
                   c.events, c.graphs, c.splits, c.processes, c.processes == 1 ? "" : "es", r->out, r->json);
    }
    if (dropped > noslot) {
        ggprof_err("warning: %" PRIu64 " records were dropped because the ring was full; try --ring-kib %ld",
                   dropped - noslot, r->ring_kib * 4);
    }
    if (noslot) {
        ggprof_err("warning: %" PRIu64 " records were dropped because more threads recorded at once than the "
                   "ring has slots (%" PRIu32 ")", noslot, n_slots);
    }
    if (messages && dropped == 0) {
        /* Messages that carry no record (node descriptions, buffers, placements) went: the records stay, some
         * without their description or memory; the trace's meta says how many (dropped_messages). */
        ggprof_err("warning: %" PRIu64 " messages without records (descriptions, memory, placements) were dropped "
                   "because the ring was full; try --ring-kib %ld", messages, r->ring_kib * 4);
    }
    return 0;
}

/* Undoes what the phases set up, whichever failed: the spill, the ring, a store never finished (and its output). */
static void record_cleanup(record_run *r) {
    ggprof_metrics_stop(r->metrics);
    r->spill.tap = NULL;
    ggprof_live_free(r->live);
    if (r->spill_open) {
        ggprof_spill_close(&r->spill);
        unlink(r->spill_path);
    }
    if (r->ring.file) {
        ggprof_ring_unmap(&r->ring);
        unlink(r->ring_path);
    }
    free(r->windows);
    ggprof_proc_sampler_free(r->sampler);
    ggprof_json_v3_stream_free(r->json_stream);
    if (r->store) {
        char why[512];
        sqlite3_close(ggprof_store_finish(r->store, why, sizeof(why)));
    }
    if (r->out_made) ggprof_outfile_end(&r->out_file, 0); /* one never renamed over OUT goes */
}

int ggprof_cmd_record(int argc, char **argv) {
    record_run r;
    memset(&r, 0, sizeof(r));
    r.out       = "ggprof.db";
    r.level_str = "op";
    r.ring_kib  = 4096;
    r.lock_fd   = -1;
    int rc = record_parse(&r, argc, argv);
    if (!rc) rc = record_prepare(&r);
    if (!rc) rc = record_start_child(&r);
    if (!rc) rc = record_drain(&r);
    /* Deferred: the background process finishes the trace; this one exits with the workload's status and undoes
     * nothing of what is now the other's (the spill, the ring, the hidden database), nor runs exit handlers. */
    if (!rc && record_defer(&r)) _exit(r.exit_code);
    if (!rc) rc = record_build(&r);
    if (!rc) rc = record_finish(&r);
    record_cleanup(&r);
    ggprof_trace_lock_drop(r.lock_fd, r.out); /* OUT and its JSON are whole (or will not be): readers go on */
    return rc ? rc : r.exit_code;
}
