/* Files ggprof creates are its user's alone, as perf.data is: each is a new file (O_CREAT|O_EXCL|O_NOFOLLOW, a fresh
 * inode that no one else holds open, never a link followed), mode 0600, checked to be a regular file of ours. A file
 * the user names (record -o, export --chrome, calibrate -o, merge -o, ...) is replaced whole: written under a fresh
 * hidden name beside it, then renamed over it once complete, so that a link planted there is replaced, not
 * followed, and a failed write leaves the old file as it was. docs/reliability.md, "Security". */
#ifndef GGPROF_OUTFILE_H
#define GGPROF_OUTFILE_H

#include <limits.h>
#include <stdio.h>

/* A file we hold open is ours: a regular file of this user, made mode 0600 if it was not.
 * 0, or -1 with errno (EPERM: another user's or not a regular file). */
int ggprof_private_check(int fd);
/* A new private file at path (acc: O_RDWR or O_WRONLY): the fd, or -1 with errno. What was at path (a file, a
 * link) is removed first, never opened: one that cannot be removed (another user's, in a sticky folder) fails. */
int ggprof_private_create(const char *path, int acc);

/* An output replaced whole: path, and the hidden file beside it that is written first. */
typedef struct {
    char path[PATH_MAX];
    char tmp[PATH_MAX];
} ggprof_outfile;

/* Creates the hidden file beside path (new, private, read-write): its fd, or -1 with errno. */
int   ggprof_outfile_begin(ggprof_outfile *o, const char *path);
/* ok: renames the hidden file over path (0, or -1 with errno, the hidden file then gone); else removes it (0). */
int   ggprof_outfile_end(ggprof_outfile *o, int ok);
/* ggprof_outfile_begin as a stdio stream for writing; NULL with errno. */
FILE *ggprof_outfile_open(ggprof_outfile *o, const char *path);
/* Closes f, and renames the file over its path when nothing failed (bad: the caller's own failure): 0, or -1 with
 * errno, the old file at path then left as it was. */
int   ggprof_outfile_close(ggprof_outfile *o, FILE *f, int bad);

#endif
