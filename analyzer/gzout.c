/* A file written plain, or gzip compressed by worker threads a block at a time (see gzout.h). */
#include "gzout.h"
#include "outfile.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#define BLOCK     (4u << 20) /* input per gzip member: ratio within 0.1% of one stream */
#define MAX_WORK  8

enum { FREE, FILLED, WORKING, DONE };

typedef struct {
    int            state;
    unsigned char *in, *out;
    size_t         in_n, out_n, out_cap;
    int            failed;
} block;

struct gzout {
    FILE           *f;
    ggprof_outfile  out;
    int             gz, level, err; /* err: an errno, once anything failed */
    /* gzip: a ring of blocks, filled here in order, compressed by any worker, written here in order */
    block           b[MAX_WORK + 2];
    size_t          n_blocks, fill, write; /* fill, write: counts; the ring index is count % n_blocks */
    pthread_t       workers[MAX_WORK];
    size_t          n_workers;
    pthread_mutex_t mu;
    pthread_cond_t  cv;
    int             stop;
    unsigned char  *plain; /* plain files: a large buffer of our own */
};

static int compress_block(block *k, int level) {
    z_stream z;
    memset(&z, 0, sizeof(z));
    if (deflateInit2(&z, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) return -1;
    size_t need = deflateBound(&z, (uLong) k->in_n) + 64;
    if (need > k->out_cap) {
        unsigned char *o = realloc(k->out, need);
        if (!o) {
            deflateEnd(&z);
            return -1;
        }
        k->out     = o;
        k->out_cap = need;
    }
    z.next_in   = k->in;
    z.avail_in  = (uInt) k->in_n;
    z.next_out  = k->out;
    z.avail_out = (uInt) k->out_cap;
    int rc      = deflate(&z, Z_FINISH);
    k->out_n    = k->out_cap - z.avail_out;
    deflateEnd(&z);
    return rc == Z_STREAM_END ? 0 : -1;
}

static void *worker(void *arg) {
    gzout *o = arg;
    pthread_mutex_lock(&o->mu);
    for (;;) {
        block *k = NULL;
        /* the oldest filled block first, so that the writer is never kept waiting by a newer one */
        for (size_t c = o->write; c < o->fill && !k; c++) {
            if (o->b[c % o->n_blocks].state == FILLED) k = &o->b[c % o->n_blocks];
        }
        if (!k) {
            if (o->stop) break;
            pthread_cond_wait(&o->cv, &o->mu);
            continue;
        }
        k->state = WORKING;
        pthread_mutex_unlock(&o->mu);
        int failed = compress_block(k, o->level);
        pthread_mutex_lock(&o->mu);
        k->failed = failed;
        k->state  = DONE;
        pthread_cond_broadcast(&o->cv);
    }
    pthread_mutex_unlock(&o->mu);
    return NULL;
}

/* Writes the oldest block once it is compressed (waiting for it when wait); called with the lock held.
 * Returns 1 when it wrote one. */
static int write_oldest(gzout *o, int wait) {
    if (o->write == o->fill) return 0;
    block *k = &o->b[o->write % o->n_blocks];
    while (wait && k->state != DONE) pthread_cond_wait(&o->cv, &o->mu);
    if (k->state != DONE) return 0;
    pthread_mutex_unlock(&o->mu);
    if (!o->err && k->failed) o->err = ENOMEM;
    if (!o->err && fwrite(k->out, 1, k->out_n, o->f) != k->out_n) o->err = errno ? errno : EIO;
    pthread_mutex_lock(&o->mu);
    k->state = FREE;
    k->in_n  = 0;
    o->write++;
    return 1;
}

/* The block being filled: the ring's next, once written out. */
static block *filling(gzout *o) {
    block *k = &o->b[o->fill % o->n_blocks];
    if (k->state == FREE && k->in) return k;
    pthread_mutex_lock(&o->mu);
    while (k->state != FREE) write_oldest(o, 1);
    pthread_mutex_unlock(&o->mu);
    if (!k->in && !(k->in = malloc(BLOCK))) return NULL;
    return k;
}

/* A full block (or the last) to the workers; without any, compressed here. */
static void submit(gzout *o, block *k) {
    if (!o->n_workers) k->failed = compress_block(k, o->level);
    pthread_mutex_lock(&o->mu);
    k->state = o->n_workers ? FILLED : DONE;
    o->fill++;
    pthread_cond_broadcast(&o->cv);
    while (write_oldest(o, 0)) {} /* what is ready goes out now: memory stays at the ring */
    pthread_mutex_unlock(&o->mu);
}

gzout *ggprof_gzout_open(const char *path, int gz, int level) {
    gzout *o = calloc(1, sizeof(*o));
    if (!o) return NULL;
    if (!(o->f = ggprof_outfile_open(&o->out, path))) { /* a new private file, renamed over path when whole */
        int e = errno;
        free(o);
        errno = e;
        return NULL;
    }
    o->gz    = gz;
    o->level = level;
    if (!gz) {
        if ((o->plain = malloc(BLOCK))) setvbuf(o->f, (char *) o->plain, _IOFBF, BLOCK);
        return o;
    }
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    o->n_workers = cpus < 1 ? 1 : cpus > MAX_WORK ? MAX_WORK : (size_t) cpus;
    o->n_blocks  = o->n_workers + 2;
    pthread_mutex_init(&o->mu, NULL);
    pthread_cond_init(&o->cv, NULL);
    for (size_t i = 0; i < o->n_workers; i++) {
        if (pthread_create(&o->workers[i], NULL, worker, o) != 0) {
            o->n_workers = i;
            break;
        }
    }
    if (!o->n_workers) { /* no thread: compress here, one block at a time */
        o->n_blocks = 1;
    }
    return o;
}

int ggprof_gzout_write(gzout *o, const void *p, size_t n) {
    if (o->err) return -1;
    if (!o->gz) {
        if (fwrite(p, 1, n, o->f) != n) o->err = errno ? errno : EIO;
        return o->err ? -1 : 0;
    }
    const unsigned char *s = p;
    while (n) {
        block *k = filling(o);
        if (!k) {
            o->err = ENOMEM;
            return -1;
        }
        size_t take = BLOCK - k->in_n < n ? BLOCK - k->in_n : n;
        memcpy(k->in + k->in_n, s, take);
        k->in_n += take, s += take, n -= take;
        if (k->in_n == BLOCK) submit(o, k);
    }
    return o->err ? -1 : 0;
}

int ggprof_gzout_puts(gzout *o, const char *s) { return ggprof_gzout_write(o, s, strlen(s)); }

int ggprof_gzout_splice(gzout *o, FILE *from) {
    if (o->err) return -1;
    if (o->gz) {
        /* what was written before goes out first, whole members: the copied bytes follow them */
        block *k = &o->b[o->fill % o->n_blocks];
        if (k->state == FREE && k->in_n) submit(o, k);
        pthread_mutex_lock(&o->mu);
        while (write_oldest(o, o->n_workers > 0)) {}
        pthread_mutex_unlock(&o->mu);
    }
    static char buf[1 << 20];
    size_t n;
    while (!o->err && (n = fread(buf, 1, sizeof(buf), from)) > 0) {
        if (fwrite(buf, 1, n, o->f) != n) o->err = errno ? errno : EIO;
    }
    if (!o->err && ferror(from)) o->err = EIO;
    return o->err ? -1 : 0;
}

int ggprof_gzout_close(gzout *o) {
    if (o->gz) {
        block *k = &o->b[o->fill % o->n_blocks];
        /* the last block, even empty when nothing was written: a gzip file has at least one member */
        if (k->state == FREE && (k->in_n || o->fill == 0)) {
            if (!k->in && !(k->in = malloc(1))) o->err = ENOMEM;
            submit(o, k);
        }
        pthread_mutex_lock(&o->mu);
        while (write_oldest(o, o->n_workers > 0)) {}
        o->stop = 1;
        pthread_cond_broadcast(&o->cv);
        pthread_mutex_unlock(&o->mu);
        for (size_t i = 0; i < o->n_workers; i++) pthread_join(o->workers[i], NULL);
        pthread_mutex_destroy(&o->mu);
        pthread_cond_destroy(&o->cv);
        for (size_t i = 0; i < o->n_blocks; i++) {
            free(o->b[i].in);
            free(o->b[i].out);
        }
    }
    if (ggprof_outfile_close(&o->out, o->f, o->err != 0) != 0 && !o->err) o->err = errno ? errno : EIO;
    int err = o->err;
    free(o->plain);
    free(o);
    if (err) errno = err;
    return err ? -1 : 0;
}
