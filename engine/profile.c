/* GGML_PROFILE without `ggprof record`: the engine starts its own collector and has it write the profile. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "internal.h"
#include "self_path.h"

static int g_ack_fd = -1; /* the collector writes a byte here once a profile is written */

static _Atomic uint64_t g_unflushed;    /* graphs recorded since the profile was last written */
static uint32_t g_flush_seq;

/* ggprof beside this library (build/lib/libggprof.so -> build/bin/ggprof), unless GGPROF_BIN says where. */
static int find_ggprof(char *out, size_t len) {
    return ggprof_sibling("GGPROF_BIN", (const void *) find_ggprof, "../bin/ggprof", X_OK, out, len);
}

/* Starts `ggprof collect` detached (a double fork: the program never sees it as its child, so its own
 * wait() calls and SIGCHLD handling stay as they were). Returns 0 with the ring created and attached. */
static int start_collector(const char *profile, char *why, size_t why_len) {
    char bin[512], ring[256], parent[32], ackfd[32];
    if (find_ggprof(bin, sizeof(bin)) != 0) {
        snprintf(why, why_len, "GGML_PROFILE needs the ggprof binary ('%s'; set GGPROF_BIN)", bin);
        return -1;
    }
    ggprof_ring_temp_path(ring, sizeof(ring), "profile");
    if (ggprof_sink_create(ring, 64, 4u << 20, GGPROF_LEVEL_OP) != 0) {
        snprintf(why, why_len, "cannot create the ring '%s': %s", ring, strerror(errno));
        return -1;
    }
    int pfd[2];
    if (pipe2(pfd, O_CLOEXEC) != 0) {
        snprintf(why, why_len, "pipe: %s", strerror(errno));
        return -1;
    }
    snprintf(parent, sizeof(parent), "%d", (int) getpid());
    snprintf(ackfd, sizeof(ackfd), "%d", pfd[1]);
    char *argv[] = { bin, "collect", "--ring", ring, "--parent", parent, "--ack-fd", ackfd, "--profile",
                     (char *) profile, NULL };
    /* The collector must not profile itself: no LD_PRELOAD, no GGML_PROFILE. */
    extern char **environ;
    size_t n = 0;
    while (environ[n]) n++;
    char **env = calloc(n + 1, sizeof(char *));
    if (!env) return -1;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (strncmp(environ[i], "LD_PRELOAD=", 11) != 0 && strncmp(environ[i], "GGML_PROFILE=", 13) != 0) {
            env[k++] = environ[i];
        }
    }
    pid_t mid = fork();
    if (mid == 0) {
        if (fork() == 0) {
            fcntl(pfd[1], F_SETFD, 0); /* the write end goes to the collector */
            execve(bin, argv, env);
            _exit(127);
        }
        _exit(0);
    }
    free(env);
    close(pfd[1]);
    if (mid < 0) {
        snprintf(why, why_len, "fork: %s", strerror(errno));
        close(pfd[0]);
        return -1;
    }
    waitpid(mid, NULL, 0);
    g_ack_fd = pfd[0];
    return 0;
}

/* Asks the collector to write the profile of everything recorded so far and waits until it has. */
static void profile_flush(bool final) {
    if (g_ack_fd < 0) return;
    if (atomic_load(&g_unflushed) == 0) {
        /* Nothing new since the last profile. At exit the collector sees the process end and leaves. */
        if (final) {
            close(g_ack_fd);
            g_ack_fd = -1;
        }
        return;
    }
    GGPROF_GUARD;
    atomic_store(&g_unflushed, 0);
    ggprof_msg_flush m = { { sizeof(m), GGPROF_MSG_FLUSH, 0 }, ++g_flush_seq, final };
    if (ggprof_emit(&m.h) == 0) {
        struct pollfd p = { g_ack_fd, POLLIN, 0 };
        char c;
        /* Bounded: a collector that died must not hang the program. */
        if (poll(&p, 1, 120000) > 0 && read(g_ack_fd, &c, 1) != 1) { /* EOF: the collector is gone */ }
    }
    if (final) {
        close(g_ack_fd);
        g_ack_fd = -1;
    }
}

void ggprof_profile_sched_freed(void) { profile_flush(false); }
void ggprof_profile_graph_recorded(void) { atomic_fetch_add_explicit(&g_unflushed, 1, memory_order_relaxed); }

static void profile_at_exit(void) { profile_flush(true); }


/* Creates the ring and starts a collector for it (0), and writes the profile at exit (the sink calls it). */
static int ggprof_profile_start(const char *profile, char *why, size_t why_len) {
    if (start_collector(profile, why, why_len) != 0) return -1;
    atexit(profile_at_exit);
    return 0;
}

static void ggprof_profile_after_fork(void) {
    /* The profile is the parent's: a child's records go to the same collector, but only the parent asks for the
     * profile to be written. */
    if (g_ack_fd >= 0) {
        close(g_ack_fd);
        g_ack_fd = -1;
    }
}

/* Registered with the sink before any wrapper can run (constructor(101), as kernels/cpu registers its timing). */
static void __attribute__((constructor(101))) profile_register(void) {
    ggprof_sink_set_profile_start(ggprof_profile_start);
    ggprof_sink_on_fork(ggprof_profile_after_fork);
}
