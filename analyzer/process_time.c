/* The whole run of a process as record measured it: fork to exit, rusage, the CPUs it could use, its threads' idle
 * time, and the weights buffers from allocation to the first graph (docs/trace-database.md, "The whole run"). */
#include "process_time.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int64_t col_or(sqlite3_stmt *st, int i, int64_t dflt) {
    return sqlite3_column_type(st, i) == SQLITE_NULL ? dflt : sqlite3_column_int64(st, i);
}

static void copy_text(char *dst, size_t len, const unsigned char *src) {
    snprintf(dst, len, "%s", src ? (const char *) src : "");
}

int ggprof_accounting_times(sqlite3 *db, int pid, ggprof_process_times *out) {
    memset(out, 0, sizeof(*out));
    out->first_graph_ns = out->load_ns = -1;
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, "SELECT fork_ns, exit_ns, how = 'wait4', exit_status, utime_ns, stime_ns, minflt, majflt,"
                               " nvcsw, nivcsw, maxrss_kib, n_cpus_allowed, n_threads, cpu_quota FROM processes_time"
                               " WHERE pid = ? LIMIT 1", -1, &st, NULL) != SQLITE_OK) {
        return 0; /* an older trace: nothing measured */
    }
    sqlite3_bind_int(st, 1, pid);
    if (sqlite3_step(st) == SQLITE_ROW) {
        out->has         = 1;
        out->fork_ns     = col_or(st, 0, 0);
        out->exit_ns     = col_or(st, 1, out->fork_ns);
        out->wall_ns     = out->exit_ns >= out->fork_ns ? out->exit_ns - out->fork_ns : 0;
        out->waited      = sqlite3_column_int(st, 2);
        out->exit_status = (int) col_or(st, 3, -1);
        int64_t *f[] = { &out->utime_ns, &out->stime_ns, &out->minflt, &out->majflt, &out->nvcsw, &out->nivcsw, &out->maxrss_kib };
        for (int i = 0; i < 7; i++) *f[i] = col_or(st, 4 + i, -1);
        out->n_cpus_allowed = (int) col_or(st, 11, -1);
        out->n_threads      = (int) col_or(st, 12, -1);
        out->cpu_quota      = sqlite3_column_type(st, 13) == SQLITE_NULL ? -1 : sqlite3_column_double(st, 13);
    }
    sqlite3_finalize(st);
    st = NULL;
    if (sqlite3_prepare_v2(db, "SELECT min(start_ns) FROM graph_list WHERE pid = ?", -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_int(st, 1, pid);
        if (sqlite3_step(st) == SQLITE_ROW) out->first_graph_ns = col_or(st, 0, -1);
    }
    sqlite3_finalize(st);
    if (out->has && out->first_graph_ns >= out->fork_ns) out->load_ns = out->first_graph_ns - out->fork_ns;
    if (!out->has) return 0;
    /* idle per thread (thread_stats.idle_ns is NULL for the threads whose idle was not kept) */
    int rc = 0;
    st     = NULL;
    if (sqlite3_prepare_v2(db, "SELECT s.tid, s.name, s.idle_ns, (SELECT count(*) FROM thread_idle i WHERE i.pid = s.pid"
                               " AND i.tid = s.tid) FROM thread_stats s WHERE s.pid = ? AND s.idle_ns IS NOT NULL"
                               " ORDER BY s.idle_ns DESC, s.tid", -1, &st, NULL) != SQLITE_OK) {
        return -1;
    }
    sqlite3_bind_int(st, 1, pid);
    while (rc == 0 && sqlite3_step(st) == SQLITE_ROW) {
        ggprof_thread_idle *n = realloc(out->idle, (out->n_idle + 1) * sizeof(*n));
        if (!n) { rc = -1; break; }
        out->idle = n;
        ggprof_thread_idle *t = &n[out->n_idle++];
        t->tid = sqlite3_column_int(st, 0);
        copy_text(t->name, sizeof(t->name), sqlite3_column_text(st, 1));
        t->idle_ns = col_or(st, 2, 0);
        t->n_runs  = col_or(st, 3, 0);
    }
    sqlite3_finalize(st);
    st = NULL;
    if (rc == 0 && out->first_graph_ns >= 0 &&
        sqlite3_prepare_v2(db, "SELECT buffer_id, name, size, alloc_ns FROM buffers WHERE pid = ? AND kind = 'weights'"
                               " AND size > 0 AND alloc_ns <= ? ORDER BY alloc_ns, buffer_id", -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_int(st, 1, pid);
        sqlite3_bind_int64(st, 2, out->first_graph_ns);
        while (rc == 0 && sqlite3_step(st) == SQLITE_ROW) {
            ggprof_buffer_load *n = realloc(out->buffers, (out->n_buffers + 1) * sizeof(*n));
            if (!n) { rc = -1; break; }
            out->buffers = n;
            ggprof_buffer_load *b = &n[out->n_buffers++];
            b->buffer_id = sqlite3_column_int64(st, 0);
            copy_text(b->name, sizeof(b->name), sqlite3_column_text(st, 1));
            b->size     = col_or(st, 2, 0);
            b->alloc_ns = col_or(st, 3, 0);
            b->ready_ns = out->first_graph_ns;
            b->load_ns  = b->ready_ns - b->alloc_ns;
            b->mb_s     = b->load_ns > 0 ? (double) b->size / (1 << 20) / ((double) b->load_ns / 1e9) : 0;
        }
    }
    sqlite3_finalize(st);
    if (rc) ggprof_process_times_free(out);
    return rc;
}

void ggprof_process_times_free(ggprof_process_times *t) {
    free(t->idle);
    free(t->buffers);
    t->idle = NULL, t->buffers = NULL, t->n_idle = t->n_buffers = 0;
}
