/* The one way ggprof creates a file: outfile.h. */
#include "outfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int ggprof_private_check(int fd) {
    struct stat st;
    if (fstat(fd, &st) != 0) return -1;
    if (!S_ISREG(st.st_mode) || st.st_uid != geteuid()) { /* root too: a file planted by another user is not ours */
        errno = EPERM;
        return -1;
    }
    return (st.st_mode & 077) != 0 ? fchmod(fd, 0600) : 0;
}

int ggprof_private_create(const char *path, int acc) {
    if (unlink(path) != 0 && errno != ENOENT) return -1;
    int fd = open(path, acc | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) return -1;
    /* O_EXCL made it, 0600 whatever the umask allowed less of; the check costs nothing and says so */
    if (ggprof_private_check(fd) != 0) {
        int e = errno;
        close(fd);
        unlink(path);
        errno = e;
        return -1;
    }
    return fd;
}

/* The descriptor path names when it is one of this process's own (/dev/stdout, /dev/stderr, /dev/fd/N,
 * /proc/self/fd/N), else -1. Those are the system's links: a rename over one (a root's `export --text /dev/stdout >
 * out.txt`, stdout a regular file) replaced /dev/stdout for every process of the machine. */
static int own_fd(const char *path) {
    if (strcmp(path, "/dev/stdout") == 0) return 1;
    if (strcmp(path, "/dev/stderr") == 0) return 2;
    const char *p = strncmp(path, "/dev/fd/", 8) == 0 ? path + 8 : strncmp(path, "/proc/self/fd/", 14) == 0 ? path + 14 : NULL;
    if (!p || *p < '0' || *p > '9') return -1;
    char *end;
    long n = strtol(p, &end, 10);
    return *end || n > 1 << 20 ? -1 : (int) n;
}

/* A device, a FIFO or a socket at path (/dev/null, /dev/stdout, a named pipe), reached directly or through a link
 * of this user's or root's (not one another user planted): written in place, never replaced. */
static bool stream_target(const char *path) {
    struct stat st, lst;
    if (stat(path, &st) != 0 || S_ISREG(st.st_mode) || S_ISDIR(st.st_mode)) return false;
    if (lstat(path, &lst) != 0) return false;
    return !S_ISLNK(lst.st_mode) || lst.st_uid == 0 || lst.st_uid == geteuid();
}

int ggprof_outfile_begin(ggprof_outfile *o, const char *path) {
    /* A database is a file: replacing a device with one (a root's `record -o /dev/null`) would break the system. */
    struct stat st;
    if (own_fd(path) >= 0 || (stat(path, &st) == 0 && !S_ISREG(st.st_mode))) {
        o->tmp[0] = 0;
        errno = own_fd(path) < 0 && S_ISDIR(st.st_mode) ? EISDIR : EINVAL;
        return -1;
    }
    const char *slash = strrchr(path, '/');
    int dir = slash ? (int) (slash - path + 1) : 0;
    if ((size_t) snprintf(o->path, sizeof(o->path), "%s", path) >= sizeof(o->path) ||
        (size_t) snprintf(o->tmp, sizeof(o->tmp), "%.*s.%s.ggprof-XXXXXX", dir, path, path + dir) >= sizeof(o->tmp)) {
        o->tmp[0] = 0;
        errno = ENAMETOOLONG;
        return -1;
    }
    /* mkostemp: O_CREAT|O_EXCL, mode 0600, a name no one can guess; O_NOFOLLOW besides */
    int fd = mkostemp(o->tmp, O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) {
        o->tmp[0] = 0;
        return -1;
    }
    if (ggprof_private_check(fd) != 0) {
        int e = errno;
        close(fd);
        ggprof_outfile_end(o, 0);
        errno = e;
        return -1;
    }
    return fd;
}

int ggprof_outfile_end(ggprof_outfile *o, int ok) {
    if (!o->tmp[0]) return 0;
    int rc = 0, e = 0;
    if (ok && rename(o->tmp, o->path) != 0) rc = -1, e = errno;
    if (!ok || rc) unlink(o->tmp);
    o->tmp[0] = 0;
    if (rc) errno = e;
    return rc;
}

FILE *ggprof_outfile_open(ggprof_outfile *o, const char *path) {
    int own = own_fd(path);
    if (own >= 0 || stream_target(path)) { /* written where it is, nothing renamed at the end */
        o->tmp[0] = 0;
        snprintf(o->path, sizeof(o->path), "%s", path);
        int sfd = own >= 0 ? fcntl(own, F_DUPFD_CLOEXEC, 3) : open(path, O_WRONLY | O_CLOEXEC);
        FILE *sf = sfd >= 0 ? fdopen(sfd, "w") : NULL;
        if (!sf && sfd >= 0) close(sfd);
        return sf;
    }
    int fd = ggprof_outfile_begin(o, path);
    if (fd < 0) return NULL;
    FILE *f = fdopen(fd, "w");
    if (!f) {
        int e = errno;
        close(fd);
        ggprof_outfile_end(o, 0);
        errno = e;
    }
    return f;
}

int ggprof_outfile_close(ggprof_outfile *o, FILE *f, int bad) {
    int e = errno;
    if (ferror(f)) bad = 1, e = errno ? errno : EIO;
    if (fclose(f) != 0 && !bad) bad = 1, e = errno;
    if (bad) {
        ggprof_outfile_end(o, 0);
        errno = e ? e : EIO;
        return -1;
    }
    return ggprof_outfile_end(o, 1);
}
