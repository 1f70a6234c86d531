/* ggprof collect: the collector that the engine starts for GGML_PROFILE, when no `ggprof record` runs. */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "collector_commands.h"
#include "export.h"
#include "json_v3.h"
#include "progress.h"
#include "spill.h"
#include "trace.h"

const char ggprof_usage_collect[] =
    "usage: ggprof collect " GGPROF_HELP_SYNOPSIS "\n"
    "\n"
    "Started by libggprof.so when a program runs with GGML_PROFILE set and no 'ggprof record': drains the\n"
    "engine's ring and, each time the program asks (a scheduler freed, the program exiting) or when the\n"
    "program dies, writes the profile of everything recorded so far, as GGML_PROFILE says:\n"
    "  1, stdout or empty   the console summary, on the program's standard output\n"
    "  a path ending .txt   the upstream profiler's three-section text report\n"
    "  any other path       version-3 JSON (gzip when it ends in .gz)\n"
    "Not meant to be run by hand. Every option is needed but --ack-fd:\n"
    GGPROF_HELP_OPTIONS;

typedef struct {
    ggprof_spill spill;
    int          flush_seen, final_seen;
} collect_ctx;

static void scan_msg(const ggprof_msg_hdr *m, void *user) {
    collect_ctx *c = user;
    if (m->kind != GGPROF_MSG_FLUSH) return;
    c->flush_seen = 1;
    if (((const ggprof_msg_flush *) m)->final) c->final_seen = 1;
}

static void on_chunk(const ggprof_ring_slot *slot, const void *bytes, size_t n, void *user) {
    collect_ctx *c = user;
    ggprof_spill_chunk(&c->spill, slot, bytes, n);
    ggprof_msgs_foreach(bytes, n, scan_msg, c);
}

static int write_profile(ggprof_spill *spill, const char *profile) {
    char why[512];
    ggprof_store *store;
    if (ggprof_store_create(&store, "", why, sizeof(why)) != 0) return ggprof_fail(GGPROF_EXIT_INTERNAL, "%s", why);
    if (ggprof_spill_replay(spill, store, false) != 0) ggprof_err("internal: cannot read back the spill file");
    sqlite3 *db = ggprof_store_finish(store, why, sizeof(why));
    if (!db) return ggprof_fail(GGPROF_EXIT_INTERNAL, "%s", why);
    size_t n = strlen(profile);
    int rc = 0;
    if (n == 0 || strcmp(profile, "1") == 0 || strcmp(profile, "stdout") == 0) {
        ggprof_op_stats s;
        if (ggprof_op_stats_load(db, &s) == 0) {
            if (s.n_records) {
                ggprof_print_summary(stdout, &s);
                ggprof_print_backends(stdout, &s);
            } else {
                printf("[ggprof] No profiling data available\n");
            }
            ggprof_op_stats_free(&s);
        }
        fflush(stdout);
    } else {
        /* The file appears whole or not at all (a reader polling for it never reads half of one): written beside
         * it under a hidden name that keeps its ending (.gz says gzip), then renamed. */
        char tmp[PATH_MAX];
        const char *slash = strrchr(profile, '/');
        snprintf(tmp, sizeof(tmp), "%.*s.ggprof-%d-%s", slash ? (int) (slash - profile + 1) : 0, profile, (int) getpid(),
                 slash ? slash + 1 : profile);
        rc = n > 4 && strcmp(profile + n - 4, ".txt") == 0 ? ggprof_export_text(db, tmp, why, sizeof(why))
                                                           : ggprof_json_v3_export(db, tmp, why, sizeof(why));
        if (rc == 0 && rename(tmp, profile) != 0) {
            snprintf(why, sizeof(why), "cannot write '%s': %s", profile, strerror(errno));
            rc = -1;
        }
        if (rc != 0) unlink(tmp);
    }
    if (rc != 0) ggprof_err("GGML_PROFILE: %s", why);
    else if (n && strcmp(profile, "1") != 0 && strcmp(profile, "stdout") != 0) {
        fprintf(stderr, "[ggprof] profile written to %s\n", profile);
    }
    sqlite3_close(db);
    return rc ? GGPROF_EXIT_USAGE : 0;
}

int ggprof_cmd_collect(int argc, char **argv) {
    /* Detached from the program it serves, whose terminal it shares: no progress lines in the program's output. */
    ggprof_progress_quiet = true;
    const char *ring_path = NULL, *profile = NULL;
    long parent = 0, ack_fd = -1;
    const ggprof_opt opts[] = {
        { "--ring", NULL, GGPROF_OPT_STRING, &ring_path, NULL, "PATH", "the engine's ring (shared memory) to drain" },
        { "--parent", NULL, GGPROF_OPT_COUNT, &parent, NULL, "PID", "the program it serves: its death ends the collector" },
        { "--ack-fd", NULL, GGPROF_OPT_COUNT, &ack_fd, NULL, "FD", "the pipe on which it acknowledges each profile written" },
        { "--profile", NULL, GGPROF_OPT_STRING, &profile, NULL, "VALUE", "GGML_PROFILE's value: where the profile goes" },
    };
    ggprof_args a = { opts, 4, NULL, 0, 0, "unexpected argument '%s'; see 'ggprof collect --help'", 0, 0, NULL };
    int bad = ggprof_parse_args(argc, argv, &a);
    if (bad) return bad;
    if (!ring_path || parent <= 0 || !profile) return ggprof_fail(GGPROF_EXIT_USAGE, "needs --ring, --parent and --profile");
    signal(SIGINT, SIG_IGN); /* a Ctrl-C meant for the program must not take its profile with it */
    /* Below the program: our wake-ups should not preempt threads that spin in ggml's barriers. */
    if (setpriority(PRIO_PROCESS, 0, 19) != 0) { /* not fatal: only the overhead is higher */ }
    signal(SIGPIPE, SIG_IGN);
    ggprof_ring ring = { 0 };
    char why[256];
    if (ggprof_ring_attach(&ring, ring_path, why, sizeof(why)) != 0) return ggprof_fail(GGPROF_EXIT_INTERNAL, "%s", why);
    unlink(ring_path); /* both sides have it mapped: nothing is left behind, whatever happens */
    char spill_path[PATH_MAX];
    snprintf(spill_path, sizeof(spill_path), "%s.spill", ring_path);
    collect_ctx c = { 0 };
    if (ggprof_spill_open(&c.spill, spill_path) != 0) return ggprof_fail(GGPROF_EXIT_INTERNAL, "cannot write '%s'", spill_path);
    unlink(spill_path);
    int rc = 0, unwritten = 0;
    ggprof_ring_pacer pacer = { 0, 0, 0 };
    for (;;) {
        /* Drained at every wake-up (a program's request for its profile comes through the ring), at most 50 ms
         * apart: the program waits for the collector to see it; and when a thread of the program ends (its
         * slot is freed for the next one). The pacer sees what arrived while it slept. */
        uint32_t seen = ggprof_ring_wake_seen(&ring);
        long ms = 0;
        ggprof_ring_map_claimed(&ring);
        ggprof_ring_pace(&pacer, &ring, 0, 50, &ms);
        size_t n = ggprof_ring_drain_raw(&ring, on_chunk, &c);
        unwritten |= n > 0;
        int alive = kill((pid_t) parent, 0) == 0 || errno != ESRCH;
        if (c.flush_seen || !alive) {
            /* One more pass: the flush came from one thread's slot; others may hold records before it. */
            ggprof_ring_drain_raw(&ring, on_chunk, &c);
            if (c.flush_seen || unwritten) rc = write_profile(&c.spill, profile);
            unwritten = 0;
            if (c.flush_seen && ack_fd >= 0 && write((int) ack_fd, "w", 1) != 1) { /* the program is gone */ }
            if (c.final_seen || !alive) break;
            c.flush_seen = 0;
        }
        ggprof_ring_wait(&ring, seen, ms);
    }
    ggprof_spill_close(&c.spill);
    ggprof_ring_unmap(&ring);
    return rc;
}
