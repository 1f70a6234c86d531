/* ggprof record: runs a command with libggprof.so injected, drains the ring while it runs, stores the trace. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
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
#include "json_v3.h"
#include "ring.h"
#include "self_path.h"
#include "spill.h"
#include "store.h"

const char ggprof_usage_record[] =
    "usage: ggprof record [-o OUT.db] [--level graph|split|op] [--serialize] [--alternate] [--ring-kib N] [-q]\n"
    "                     -- CMD [ARGS...]\n"
    "\n"
    "Runs CMD with the ggprof engine injected (LD_PRELOAD) and records every ggml graph, split, copy and\n"
    "CPU op it computes. While CMD runs, records are only copied out of the ring (to OUT.db.spill); the\n"
    "database is built when CMD ends. Writes OUT.db (SQLite; see 'ggprof query') and OUT.json.gz (the version-3 JSON of\n"
    "the upstream profiler, one record per line). Exits with CMD's exit status (128+N if signal N ended it).\n"
    "Ends with a line per process: the levels that produced records, the CPU splits timed op by op and with\n"
    "which of ggml's tick rules (docs/how-it-works.md), then what the engine turned off for that ggml, and why.\n"
    "\n"
    "  -o, --output OUT.db   trace database to write (default ggprof.db); replaced if it exists\n"
    "  --level LEVEL         graph: one record per graph compute; split: also splits and copies;\n"
    "                        op: also every CPU op and the barrier waits between them (default)\n"
    "  --serialize           also time GPU backends node by node (each node computed alone, then synchronized):\n"
    "                        per-node wall time at the cost of the backend's batching; BLAS always is\n"
    "  --alternate           record a fixed pseudo-random half of the scheduler graphs at level graph only:\n"
    "                        adjacent graphs of the two kinds then show what the engine's per-split and\n"
    "                        per-op work costs (tests/bench/overhead_ab.sh)\n"
    "  --ring-kib N          ring size per producing thread in KiB, a power of two (default 4096);\n"
    "                        when the workload outruns the collector, records are dropped and counted\n"
    "  -q, --quiet           print nothing but errors\n"
    "\n"
    "GGML_PROFILE is ignored under 'ggprof record' (the collector decides what is recorded).\n";

static volatile sig_atomic_t g_child;

static ggprof_ring *volatile g_poke_ring;

static void on_sigchld(int sig) {
    (void) sig;
    int e = errno; /* ggprof_ring_poke makes a system call */
    if (g_poke_ring) ggprof_ring_poke(g_poke_ring);
    errno = e;
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

/* libggprof.so beside the binary (build/bin/ggprof -> build/lib/libggprof.so), unless GGPROF_LIB says where. */
static int find_engine(char *out, size_t len) {
    return ggprof_sibling("GGPROF_LIB", (const void *) find_engine, "../lib/libggprof.so", R_OK, out, len);
}

static uint64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t) ts.tv_sec * 1000 + (uint64_t) ts.tv_nsec / 1000000;
}

/* OUT.db -> OUT.json.gz; any other name gets .json.gz appended. */
static void json_path_for(const char *db, char *out, size_t len) {
    size_t n = strlen(db);
    if (n > 3 && strcmp(db + n - 3, ".db") == 0) n -= 3;
    snprintf(out, len, "%.*s.json.gz", (int) n, db);
}

/* One line per process of what was recorded: the levels that produced records, the CPU splits timed op by op and
 * with which tick model, then the engine's notes (what it turned off, and why). */
static void print_processes(sqlite3 *db, int level) {
    static const char *const sql =
        "SELECT p.pid, p.exe, p.ggml_version,"
        " (SELECT count(*) FROM graph_list g WHERE g.pid = p.pid),"
        " (SELECT count(*) FROM split_list s WHERE s.pid = p.pid),"
        " (SELECT count(*) FROM events e WHERE e.pid = p.pid AND e.type = 0),"
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
        ggprof_err("pid %d %s (ggml %s): %s%s", pid, base, ver && *ver ? ver : "unknown",
                   graphs ? levels : "no graph computed", cpu_ops);
        sqlite3_reset(nt);
        sqlite3_bind_int(nt, 1, pid);
        while (sqlite3_step(nt) == SQLITE_ROW) ggprof_err("  pid %d: %s", pid, (const char *) sqlite3_column_text(nt, 0));
    }
    sqlite3_finalize(st);
    sqlite3_finalize(nt);
}

int ggprof_cmd_record(int argc, char **argv) {
    const char *out   = "ggprof.db";
    int         level = GGPROF_LEVEL_OP;
    uint64_t    ring_kib = 4096;
    int         quiet = 0;
    uint32_t    flags = 0;
    int         i     = 1;
    for (; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--") == 0) {
            i++;
            break;
        } else if (strcmp(a, "-o") == 0 || strcmp(a, "--output") == 0) {
            if (++i >= argc) return ggprof_fail(GGPROF_EXIT_USAGE, "%s needs a file name", a);
            out = argv[i];
        } else if (strcmp(a, "--level") == 0) {
            if (++i >= argc || (level = parse_level(argv[i])) < 0) {
                return ggprof_fail(GGPROF_EXIT_USAGE, "--level '%s' is not a level; expected graph, split or op",
                                   i < argc ? argv[i] : "");
            }
        } else if (strcmp(a, "--ring-kib") == 0) {
            char *end = NULL;
            if (++i < argc) ring_kib = strtoull(argv[i], &end, 10);
            if (i >= argc || !end || *end || ring_kib < 4 || ring_kib > (1u << 20) || (ring_kib & (ring_kib - 1))) {
                return ggprof_fail(GGPROF_EXIT_USAGE, "--ring-kib '%s' is not a power of two from 4 to 1048576",
                                   i < argc ? argv[i] : "");
            }
        } else if (strcmp(a, "--serialize") == 0) {
            flags |= GGPROF_RING_SERIALIZE;
        } else if (strcmp(a, "--alternate") == 0) {
            flags |= GGPROF_RING_ALTERNATE;
        } else if (strcmp(a, "-q") == 0 || strcmp(a, "--quiet") == 0) {
            quiet = 1;
        } else if (a[0] == '-') {
            return ggprof_fail(GGPROF_EXIT_USAGE, "unknown option '%s'; see 'ggprof record --help'", a);
        } else {
            break;
        }
    }
    if (i >= argc) return ggprof_fail(GGPROF_EXIT_USAGE, "no command to run; usage: ggprof record [OPTIONS] -- CMD [ARGS...]");
    char **cmd = argv + i;

    char engine[PATH_MAX];
    if (find_engine(engine, sizeof(engine)) != 0) {
        return ggprof_fail(GGPROF_EXIT_INTERNAL, "cannot find the engine '%s' (set GGPROF_LIB or run 'make')", engine);
    }

    /* Create the output first: a bad -o is a user mistake, reported before anything runs. */
    char json[PATH_MAX];
    json_path_for(out, json, sizeof(json));
    struct stat st;
    if (stat(out, &st) == 0 && !S_ISREG(st.st_mode)) {
        return ggprof_fail(GGPROF_EXIT_USAGE, "cannot write '%s': not a regular file", out);
    }
    int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) return ggprof_fail(GGPROF_EXIT_USAGE, "cannot write '%s': %s", out, strerror(errno));
    close(fd);
    unlink(out);
    char why[512];
    ggprof_store *store;
    if (ggprof_store_create(&store, out, why, sizeof(why)) != 0) return ggprof_fail(GGPROF_EXIT_USAGE, "%s", why);

    char ring_path[PATH_MAX];
    const char *shm = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : (getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    snprintf(ring_path, sizeof(ring_path), "%s/ggprof-%d-%" PRIu64 ".ring", shm, (int) getpid(), now_ms());
    ggprof_ring ring = { 0 };
    if (ggprof_ring_create(&ring, ring_path, 64, ring_kib * 1024, (uint32_t) level) == 0) {
        ring.file->flags = flags;
    } else {
        int e = errno;
        sqlite3_close(ggprof_store_finish(store, why, sizeof(why)));
        unlink(out);
        return ggprof_fail(GGPROF_EXIT_INTERNAL, "cannot create the ring '%s': %s", ring_path, strerror(e));
    }

    if (getenv("GGML_PROFILE") && !quiet) {
        ggprof_err("note: GGML_PROFILE=%s is ignored under 'ggprof record'", getenv("GGML_PROFILE"));
    }

    /* A pipe that closes on exec tells the parent whether the command started. */
    int pfd[2];
    if (pipe2(pfd, O_CLOEXEC) != 0) return ggprof_fail(GGPROF_EXIT_INTERNAL, "pipe: %s", strerror(errno));
    struct sigaction sa = { 0 };
    sa.sa_handler = forward_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    int sigs[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT };
    for (size_t k = 0; k < sizeof(sigs) / sizeof(sigs[0]); k++) sigaction(sigs[k], &sa, NULL);

    uint64_t wall_start = (uint64_t) time(NULL);
    pid_t child = fork();
    if (child < 0) return ggprof_fail(GGPROF_EXIT_INTERNAL, "fork: %s", strerror(errno));
    if (child == 0) {
        close(pfd[0]);
        const char *pre = getenv("LD_PRELOAD");
        char preload[PATH_MAX * 2];
        snprintf(preload, sizeof(preload), "%s%s%s", engine, pre && *pre ? ":" : "", pre && *pre ? pre : "");
        setenv("LD_PRELOAD", preload, 1);
        setenv("GGPROF_RING", ring_path, 1);
        unsetenv("GGML_PROFILE");
        execvp(cmd[0], cmd);
        int e = errno;
        if (write(pfd[1], &e, sizeof(e)) < 0) _exit(127);
        _exit(127);
    }
    g_child = child;
    close(pfd[1]);
    /* Below the workload: the collector's wake-ups should not preempt threads that spin in ggml's barriers. */
    if (setpriority(PRIO_PROCESS, 0, 19) != 0) { /* not fatal: only the overhead is higher */ }
    int exec_errno = 0;
    ssize_t got = read(pfd[0], &exec_errno, sizeof(exec_errno));
    close(pfd[0]);
    int status = 0;
    if (got == (ssize_t) sizeof(exec_errno)) {
        waitpid(child, &status, 0);
        sqlite3_close(ggprof_store_finish(store, why, sizeof(why)));
        ggprof_ring_unmap(&ring);
        unlink(ring_path);
        unlink(out);
        return ggprof_fail(GGPROF_EXIT_USAGE, "cannot run '%s': %s", cmd[0], strerror(exec_errno));
    }

    /* The spill file sits beside the output: if the collector itself dies, what it had drained is there. */
    char spill_path[PATH_MAX];
    snprintf(spill_path, sizeof(spill_path), "%s.spill", out);
    ggprof_spill spill;
    if (ggprof_spill_open(&spill, spill_path) != 0) {
        int e = errno;
        kill(child, SIGKILL);
        waitpid(child, &status, 0);
        return ggprof_fail(GGPROF_EXIT_USAGE, "cannot write '%s': %s", spill_path, strerror(e));
    }
    /* While the command runs, a slot is only drained once it is a quarter full: a short run is not touched at
     * all, a long one every second or so (the ring lives in shared memory: a command that crashes or is
     * killed leaves it whole, and it is read to the end below). The sleep ends early when a thread of the
     * command ends (its slot is freed for the next one) and when the command does (SIGCHLD pokes the ring). */
    g_poke_ring = &ring;
    struct sigaction chld = { 0 };
    chld.sa_handler = on_sigchld;
    sigemptyset(&chld.sa_mask);
    chld.sa_flags = SA_RESTART | SA_NOCLDSTOP;
    sigaction(SIGCHLD, &chld, NULL);
    ggprof_ring_pacer pacer = { 0, 0 };
    for (;;) {
        uint32_t seen = ggprof_ring_wake_seen(&ring);
        pid_t w = waitpid(child, &status, WNOHANG);
        if (w == child || (w < 0 && errno != EINTR)) break;
        long ms = 0;
        if (ggprof_ring_pace(&pacer, &ring, ring.file->slot_cap / 4, 200, &ms)) ggprof_spill_drain(&spill, &ring);
        ggprof_ring_wait(&ring, seen, ms);
    }
    signal(SIGCHLD, SIG_DFL);
    g_child = 0;
    /* Whatever reached the ring before the end, a SIGKILL included, is still there: read it all. */
    while (ggprof_spill_drain(&spill, &ring) > 0) {}
    if (ggprof_spill_replay(&spill, store) != 0) ggprof_err("internal: cannot read back '%s'", spill_path);
    ggprof_spill_close(&spill);
    unlink(spill_path);

    int exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 1;
    uint64_t dropped = ggprof_ring_dropped(&ring);
    uint64_t noslot  = atomic_load(&ring.file->dropped_noslot); /* threads that found every slot taken */
    uint32_t n_slots = ring.file->n_slots;
    uint32_t n_attached = atomic_load(&ring.file->n_processes);
    ggprof_ring_unmap(&ring);
    unlink(ring_path);

    char buf[64];
    size_t cmdlen = 0;
    char cmdline[4096] = "";
    for (char **a = cmd; *a && cmdlen < sizeof(cmdline); a++) {
        cmdlen += (size_t) snprintf(cmdline + cmdlen, sizeof(cmdline) - cmdlen, "%s%s", a == cmd ? "" : " ", *a);
    }
    ggprof_store_meta(store, "command", cmdline);
    ggprof_store_meta(store, "level", level_name(level));
    snprintf(buf, sizeof(buf), "%d", exit_code);
    ggprof_store_meta(store, "exit_status", buf);
    snprintf(buf, sizeof(buf), "%" PRIu64, dropped);
    ggprof_store_meta(store, "dropped_records", buf);
    snprintf(buf, sizeof(buf), "%" PRIu64, wall_start);
    ggprof_store_meta(store, "started_unix", buf);
    ggprof_store_counts c = ggprof_store_get_counts(store);
    sqlite3 *db = ggprof_store_finish(store, why, sizeof(why));
    if (!db) {
        ggprof_err("%s", why);
        return exit_code ? exit_code : GGPROF_EXIT_INTERNAL;
    }
    int json_ok = ggprof_json_v3_export(db, json, why, sizeof(why));
    if (!quiet && c.processes) print_processes(db, level);
    sqlite3_close(db);
    if (json_ok != 0) ggprof_err("%s", why);

    if (!quiet) {
        if (c.processes == 0) {
            ggprof_err("no ggml activity was seen in '%s'%s; '%s' holds an empty trace", cmd[0],
                       n_attached ? "" : " (no process loaded ggml)", out);
        } else {
            ggprof_err("%" PRIu64 " records, %" PRIu64 " graphs, %" PRIu64 " splits from %" PRIu64
                       " process%s in '%s' and '%s'",
                       c.events, c.graphs, c.splits, c.processes, c.processes == 1 ? "" : "es", out, json);
        }
        if (dropped > noslot) {
            ggprof_err("warning: %" PRIu64 " records were dropped because the ring was full; try --ring-kib %" PRIu64,
                       dropped - noslot, ring_kib * 4);
        }
        if (noslot) {
            ggprof_err("warning: %" PRIu64 " records were dropped because more threads recorded at once than the "
                       "ring has slots (%" PRIu32 ")", noslot, n_slots);
        }
    }
    return exit_code;
}
