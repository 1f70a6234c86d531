/* The lock a background finish of `record` holds on a trace, and the wait of its readers (trace_lock.h). */
#include "trace_lock.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "outfile.h"
#include "v3_format.h"

static void lock_path(const char *out, char *buf, size_t len) { snprintf(buf, len, "%s.lock", out); }

int ggprof_trace_lock_take(const char *out) {
    char path[PATH_MAX + 8];
    lock_path(out, path, sizeof(path));
    int fd = ggprof_private_create(path, O_RDWR);
    if (fd < 0) return -1;
    if (flock(fd, LOCK_EX) != 0) {
        int e = errno;
        close(fd);
        unlink(path);
        errno = e;
        return -1;
    }
    return fd;
}

void ggprof_trace_lock_owner(int fd, pid_t pid) {
    char text[32];
    int  n = snprintf(text, sizeof(text), "%ld\n", (long) pid);
    if (ftruncate(fd, 0) != 0 || pwrite(fd, text, (size_t) n, 0) != n) { /* the wait's line then says pid ? */ }
}

void ggprof_trace_lock_drop(int fd, const char *out) {
    if (fd < 0) return;
    char path[PATH_MAX + 8];
    lock_path(out, path, sizeof(path));
    unlink(path); /* first: a reader that finds the file after this never waits on a lock let go */
    close(fd);
}

/* Waits on one lock file, if it is there and this user's (one planted by someone else is not waited on). */
static void wait_on(const char *lock, const char *path) {
    int fd = open(lock, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return;
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid()) {
        close(fd);
        return;
    }
    char pid[24] = "?";
    ssize_t n = pread(fd, pid, sizeof(pid) - 1, 0);
    if (n > 0) {
        pid[n] = 0;
        pid[strspn(pid, "0123456789")] = 0;
    }
    if (!pid[0]) snprintf(pid, sizeof(pid), "?");
    char safe[1024];
    static char warned[PATH_MAX + 16]; /* a command that opens the trace twice says it once */
    if (flock(fd, LOCK_SH | LOCK_NB) == 0) {
        /* free, yet not removed: the process that held it ended before the trace was whole */
        if (strcmp(warned, lock) == 0) {
            close(fd);
            return;
        }
        snprintf(warned, sizeof(warned), "%s", lock);
        char log[PATH_MAX + 16];
        snprintf(log, sizeof(log), "%.*s.log", (int) (strlen(lock) - 5), lock);
        ggprof_err("warning: 'ggprof record' (pid %s) ended before '%s' was finished (killed?); see '%s'", pid,
                   ggprof_text_safe(path, safe, 512), ggprof_text_safe(log, safe + 512, sizeof(safe) - 512));
    } else if (errno == EWOULDBLOCK) {
        ggprof_err("waiting for '%s' to be finished by record (pid %s)", ggprof_text_safe(path, safe, sizeof(safe)), pid);
        while (flock(fd, LOCK_SH) != 0 && errno == EINTR) {}
    }
    close(fd);
}

void ggprof_trace_wait(const char *path) {
    char lock[PATH_MAX + 16];
    size_t n = strlen(path);
    if (n >= PATH_MAX) return;
    lock_path(path, lock, sizeof(lock));
    wait_on(lock, path);
    /* the JSON of OUT: X.json.gz (or X.json) is X.db's or X's */
    const char *sfx[] = { ".json.gz", ".json" };
    for (size_t i = 0; i < sizeof(sfx) / sizeof(sfx[0]); i++) {
        size_t k = strlen(sfx[i]);
        if (n <= k || strcmp(path + n - k, sfx[i]) != 0) continue;
        snprintf(lock, sizeof(lock), "%.*s.db.lock", (int) (n - k), path);
        wait_on(lock, path);
        snprintf(lock, sizeof(lock), "%.*s.lock", (int) (n - k), path);
        wait_on(lock, path);
        break;
    }
}
