/* The lock a background finish of `record` holds on a trace until its database and its JSON are whole. */
#ifndef GGPROF_TRACE_LOCK_H
#define GGPROF_TRACE_LOCK_H

#include <stddef.h>
#include <sys/types.h>

/* record -o OUT: the lock is OUT.lock, a private file held (flock, exclusive) by the process that finishes the
 * trace, its pid written in it; the file goes once OUT and its JSON are renamed into place. Returns the fd (held),
 * or -1 with errno. */
int  ggprof_trace_lock_take(const char *out);
/* Writes the finishing process's pid into the lock file. */
void ggprof_trace_lock_owner(int fd, pid_t pid);
/* Removes OUT.lock, then lets go of it (a reader waiting on it goes on to the whole trace). */
void ggprof_trace_lock_drop(int fd, const char *out);
/* A reader of path (OUT, or OUT's JSON: X.json.gz for X.db or X) waits while a record finishes it in the
 * background, with one line on stderr; a lock left by one that died is said in one line too. */
void ggprof_trace_wait(const char *path);

#endif
