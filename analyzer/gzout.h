/* Writing a large file, plain or gzip, as fast as the machine allows: gzip is compressed by worker threads, one
 * block at a time, each block a gzip member of its own (RFC 1952 allows members one after another; zlib's
 * gzread, gzip -d, Python's gzip and Node's zlib read them as one stream), so that a million-record JSON does
 * not wait on one core's deflate. */
#ifndef GGPROF_GZOUT_H
#define GGPROF_GZOUT_H

#include <stddef.h>
#include <stdio.h>

typedef struct gzout gzout;

/* gz: compress (level 1-9); else a plain file. The file is written beside path, private (outfile.h), and renamed
 * over it by a close that succeeds; one that fails leaves what was at path. Returns NULL with errno set. */
gzout *ggprof_gzout_open(const char *path, int gz, int level);
/* Returns 0, or -1 once anything failed (the error is kept for close). */
int ggprof_gzout_write(gzout *o, const void *p, size_t n);
int ggprof_gzout_puts(gzout *o, const char *s);
/* Copies from's bytes as they are after what was written: for gzip, whole gzip members (another gzout's file),
 * which a reader takes as one stream with the rest. Returns 0, or -1 once anything failed. */
int ggprof_gzout_splice(gzout *o, FILE *from);
/* Writes what is left and closes; 0, or -1 with errno set when anything failed. Frees o either way. */
int ggprof_gzout_close(gzout *o);

#endif
