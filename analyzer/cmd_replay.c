/* ggprof replay: the trace's op cases run alone by ggml's test-backend-ops (perf mode), beside their in-situ time. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "analyzer_commands.h"
#include "output.h"
#include "roofline.h"
#include "self_path.h"
#include "testcases.h"
#include "trace.h"
#include "trace_db.h"
#include "v3_format.h"

const char ggprof_usage_replay[] =
    "usage: ggprof replay TRACE " GGPROF_HELP_SYNOPSIS "\n"
    "\n"
    "Runs the trace's distinct op cases (those 'ggprof export --test-file' writes) one by one in ggml's\n"
    "test-backend-ops, perf mode, and prints per case: in-situ runs and mean time (from the trace), the isolated\n"
    "time (test-backend-ops), their ratio (in-situ / isolated) and the case's share of the run's op time, largest\n"
    "share first. A ratio well above 1 points at the surroundings (memory, caches, threads, synchronisation), a\n"
    "slow case in both at the kernel (docs/replay.md). The results go into the trace's 'replay' table.\n"
    "\n"
    GGPROF_HELP_OPTIONS;

typedef struct {
    const char *trace, *backend, *tbo;
    double      min_share;
    long        n;
    int         format;
} replay_opts;

/* What test-backend-ops said of one case. */
typedef struct {
    int    ran, supported;
    double time_us;
    long   n_runs;
} replay_result;

static int replay_parse(replay_opts *o, int argc, char **argv) {
    const ggprof_opt opts[] = {
        { "--backend", NULL, GGPROF_OPT_STRING, &o->backend, NULL, "NAME",
          "run every case on this backend (default: the backend each case ran on)" },
        { "--test-backend-ops", NULL, GGPROF_OPT_STRING, &o->tbo, NULL, "PATH",
          "the test-backend-ops to run (default: the first in PATH, then the one beside ggprof; never a path the "
          "trace names); it must be of the traced ggml: the cases carry its enum values" },
        { "--min-share", NULL, GGPROF_OPT_PERCENT, &o->min_share, NULL, "PCT",
          "only the cases of at least PCT% of the trace's op time" },
        { "-n", NULL, GGPROF_OPT_COUNT, &o->n, NULL, "N", "the N largest cases only (default 20; 0: all)" },
        { "--format", NULL, GGPROF_OPT_CALL, &o->format, ggprof_format_opt, "table|csv|json",
          "table (default), csv or json" },
    };
    ggprof_args a = { opts, 5, &o->trace, 1, 0, "one trace at a time ('%s' is a second)", 0, 0, NULL };
    int rc = ggprof_parse_args(argc, argv, &a);
    if (rc) return rc;
    if (!o->trace) return ggprof_fail(GGPROF_EXIT_USAGE, "no trace given; usage: ggprof replay TRACE [--backend NAME]");
    return 0;
}

/* The test-backend-ops to run: the one the user named, else the first in PATH, else the one beside this ggprof
 * (an install that ships it). Never a path from the trace: a trace from anyone names any folder, and would have
 * us run what lies there; the traced library's folder is only printed, quoted, as a hint. 0, or an exit code. */
static int pick_tbo(sqlite3 *db, const char *given, char *out, size_t len) {
    if (given) {
        snprintf(out, len, "%s", given);
        return access(out, X_OK) == 0 ? 0 : ggprof_fail(GGPROF_EXIT_USAGE, "cannot run '%s': %s", out, strerror(errno));
    }
    const char *path = getenv("PATH");
    for (const char *p = path; p && *p;) {
        const char *e = strchr(p, ':');
        size_t      n = e ? (size_t) (e - p) : strlen(p);
        snprintf(out, len, "%.*s/test-backend-ops", (int) n, p);
        if (n && out[0] == '/' && access(out, X_OK) == 0) return 0;
        p = e ? e + 1 : NULL;
    }
    char dir[PATH_MAX];
    if (ggprof_self_dir((const void *) pick_tbo, dir, sizeof(dir)) == 0) {
        snprintf(out, len, "%s/test-backend-ops", dir);
        if (access(out, X_OK) == 0) return 0;
    }
    /* the hint: printed, never run */
    char lib[512] = "";
    sqlite3_stmt *st = NULL;
    if (db && sqlite3_prepare_v2(db, "SELECT ggml_lib FROM processes WHERE ggml_lib != '' LIMIT 1", -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0)) {
        const char *l = (const char *) sqlite3_column_text(st, 0), *slash = strrchr(l, '/');
        size_t k = 0;
        for (const char *c = l; slash && c < slash && k + 1 < sizeof(lib); c++) {
            lib[k++] = (*c >= ' ' && *c < 0x7f && *c != '\'') ? *c : '?'; /* one line, no control bytes */
        }
        lib[k] = '\0';
    }
    sqlite3_finalize(st);
    return ggprof_fail(GGPROF_EXIT_USAGE, "no test-backend-ops in PATH or beside ggprof; give --test-backend-ops PATH%s%s%s",
                       lib[0] ? " (the traced ggml was in '" : "", lib, lib[0] ? "': check what is there before naming it)" : "");
}

/* Runs argv, its stdout into *out (malloc'd, NUL-terminated), its stderr into errlog. Returns its exit status,
 * or -1 when it could not be run. */
static int run_capture(char *const argv[], char **out, const char *errlog) {
    int pfd[2];
    *out = NULL;
    if (pipe(pfd) != 0) return -1;
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        int e = open(errlog, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0600);
        if (e >= 0) dup2(e, 2);
        dup2(pfd[1], 1);
        close(pfd[0]);
        close(pfd[1]);
        execv(argv[0], argv);
        _exit(127);
    }
    close(pfd[1]);
    size_t len = 0, cap = 1 << 16;
    char  *buf = malloc(cap);
    ssize_t got;
    while (buf && (got = read(pfd[0], buf + len, cap - len - 1)) != 0) {
        if (got < 0) {
            if (errno == EINTR) continue;
            break;
        }
        len += (size_t) got;
        if (cap - len < 4096) {
            char *b = realloc(buf, cap *= 2);
            if (!b) free(buf);
            buf = b;
        }
    }
    close(pfd[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
    if (buf) buf[len] = '\0';
    *out = buf;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* The SQL test-backend-ops printed (--output sql): one row per case, named ggprof_case_K. */
static int read_results(const char *sql, replay_result *res, size_t n, char *why, size_t why_len) {
    sqlite3 *m = NULL;
    char    *err = NULL;
    if (sqlite3_open(":memory:", &m) != SQLITE_OK || sqlite3_exec(m, sql, NULL, NULL, &err) != SQLITE_OK) {
        snprintf(why, why_len, "test-backend-ops printed no results it could read (%s)", err ? err : sqlite3_errmsg(m));
        sqlite3_free(err);
        sqlite3_close(m);
        return -1;
    }
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(m, "SELECT op_params, supported, time_us, n_runs FROM test_backend_ops", -1, &st, NULL);
    while (rc == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW) {
        const char *p = (const char *) sqlite3_column_text(st, 0);
        const char *k = p ? strstr(p, "name=ggprof_case_") : NULL;
        size_t      i = k ? strtoul(k + 17, NULL, 10) : n;
        if (i >= n) continue;
        res[i].ran       = 1;
        res[i].supported = sqlite3_column_int(st, 1);
        res[i].time_us   = sqlite3_column_double(st, 2);
        res[i].n_runs    = sqlite3_column_int(st, 3);
    }
    sqlite3_finalize(st);
    sqlite3_close(m);
    return 0;
}

/* One test-backend-ops run for the cases on one backend (all of them, with --backend). */
static int replay_backend(const char *tbo, const char *backend, const ggprof_cases *c, const char *only,
                          replay_result *res) {
    char file[] = "/tmp/ggprof-replay-XXXXXX", errlog[64], why[512];
    int  fd = mkstemp(file);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f) return ggprof_fail(GGPROF_EXIT_INTERNAL, "cannot write a temporary test file: %s", strerror(errno));
    size_t n = 0;
    for (size_t i = 0; i < c->n; i++) {
        if (only && strcmp(c->v[i].backend, only) != 0) continue;
        char name[32];
        snprintf(name, sizeof(name), "ggprof_case_%zu", i);
        ggprof_case_write(f, &c->v[i], name);
        n++;
    }
    if (ggprof_close_output(f, file) != 0) return GGPROF_EXIT_INTERNAL;
    snprintf(errlog, sizeof(errlog), "%s.log", file);
    char *argv[] = { (char *) tbo, "perf", "-b", (char *) backend, "--test-file", file, "--output", "sql", NULL };
    char *sql    = NULL;
    int   status = n ? run_capture(argv, &sql, errlog) : 0;
    int   rc     = 0;
    if (status != 0) {
        rc = ggprof_fail(GGPROF_EXIT_INTERNAL, "'%s perf -b %s --test-file %s' exited %d (its messages: %s)", tbo,
                         backend, file, status, errlog);
    } else if (n && read_results(sql ? sql : "", res, c->n, why, sizeof(why)) != 0) {
        rc = ggprof_fail(GGPROF_EXIT_INTERNAL, "%s", why);
    }
    free(sql);
    if (rc == 0) {
        unlink(file);
        unlink(errlog);
    }
    return rc;
}

/* The results into the trace's replay table (a database trace only: a JSON one is read into memory). */
static void replay_store(sqlite3 *db, const char *trace, const ggprof_cases *c, const replay_result *res,
                         const char *backend) {
    const char *file = sqlite3_db_filename(db, "main");
    db               = NULL;
    /* The trace is open read-only (ggprof_trace_open); the results go in by a connection of their own, hardened
     * alike (no trigger of the trace fires on the insert). */
    if (!file || !*file || access(file, W_OK) != 0 ||
        sqlite3_open_v2(file, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
        sqlite3_close(db);
        ggprof_err("note: results not stored ('%s' is %s)", trace, file && *file ? "read-only" : "JSON, read into memory");
        return;
    }
    ggprof_db_harden(db, 0);
    sqlite3_stmt *st = NULL;
    sqlite3_exec(db, "BEGIN; " GGPROF_DB_REPLAY_DDL "DELETE FROM replay;", NULL, NULL, NULL);
    sqlite3_prepare_v2(db, "INSERT INTO replay(case_id, backend, op, op_id, test, count, insitu_ns, isolated_ns, ratio,"
                           " share, n_runs, replayed_unix) VALUES(?,?,?,?,?,?,?,?,?,?,?,?)", -1, &st, NULL);
    for (size_t i = 0; st && i < c->n; i++) {
        const ggprof_case *k = &c->v[i];
        char line[2048];
        FILE *m = fmemopen(line, sizeof(line), "w");
        if (m) {
            ggprof_case_write(m, k, NULL);
            fclose(m);
        }
        line[strcspn(line, "\n")] = '\0';
        double insitu = k->count ? k->total_ns / (double) k->count : 0;
        sqlite3_bind_int64(st, 1, (sqlite3_int64) i);
        sqlite3_bind_text(st, 2, backend ? backend : k->backend, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 3, k->op, -1, SQLITE_TRANSIENT);
        sqlite3_bind_int(st, 4, k->op_id);
        sqlite3_bind_text(st, 5, line, -1, SQLITE_TRANSIENT);
        sqlite3_bind_int64(st, 6, k->count);
        sqlite3_bind_double(st, 7, insitu);
        if (res[i].ran && res[i].supported) {
            sqlite3_bind_double(st, 8, res[i].time_us * 1e3);
            sqlite3_bind_double(st, 9, res[i].time_us > 0 ? insitu / (res[i].time_us * 1e3) : 0);
        } else {
            sqlite3_bind_null(st, 8);
            sqlite3_bind_null(st, 9);
        }
        sqlite3_bind_double(st, 10, k->share);
        sqlite3_bind_int64(st, 11, res[i].n_runs);
        sqlite3_bind_int64(st, 12, (sqlite3_int64) time(NULL));
        sqlite3_step(st);
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    if (sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
        ggprof_err("note: results not stored in '%s': %s", trace, sqlite3_errmsg(db));
    }
    sqlite3_close(db);
}

static const ggprof_col k_cols[] = {
    { "#", "case", NULL, 0 },
    { "op", "op", NULL, 0 },
    { "tensor", "tensor", NULL, GGPROF_COL_FLEX },
    { "shape", "shape", NULL, GGPROF_COL_FLEX },
    { "backend", "backend", NULL, 0 },
    { "runs", "count", NULL, 0 },
    { "in-situ us", "insitu_us", "%.2f", 0 },
    { "alone us", "isolated_us", "%.2f", 0 },
    { "ratio", "ratio", "%.2f", 0 },
    { "share%", "share_pct", "%.1f", 0 },
};

static int replay_print(const ggprof_cases *c, const replay_result *res, const char *backend, int format) {
    ggprof_table t;
    ggprof_table_init(&t, k_cols, sizeof(k_cols) / sizeof(k_cols[0]));
    for (size_t i = 0; i < c->n; i++) {
        const ggprof_case *k = &c->v[i];
        char shape[96];
        snprintf(shape, sizeof(shape), "%lldx%lldx%lldx%lld", (long long) k->ne[0], (long long) k->ne[1],
                 (long long) k->ne[2], (long long) k->ne[3]);
        double insitu = k->count ? k->total_ns / (double) k->count / 1e3 : 0;
        ggprof_table_int(&t, (int64_t) i);
        ggprof_table_text(&t, k->op);
        ggprof_table_text(&t, k->name);
        ggprof_table_text(&t, shape);
        ggprof_table_text(&t, backend ? backend : k->backend);
        ggprof_table_int(&t, k->count);
        ggprof_table_real(&t, insitu);
        if (res[i].ran && res[i].supported && res[i].time_us > 0) {
            ggprof_table_real(&t, res[i].time_us);
            ggprof_table_real(&t, insitu / res[i].time_us);
        } else {
            ggprof_table_text(&t, res[i].ran ? "unsupported" : "not run");
            ggprof_table_null(&t);
        }
        ggprof_table_real(&t, k->share);
    }
    int bad = ggprof_table_write(&t, (ggprof_format) format, stdout, 100);
    ggprof_table_free(&t);
    if (format == GGPROF_FMT_TABLE) {
        printf("in-situ: the case's mean time in the trace; alone: test-backend-ops perf, the same op repeated.\n"
               "ratio: in-situ / alone; well above 1, the surroundings cost (cold weights, caches, threads, waits);\n"
               "near 1 and a large share, the kernel itself (docs/replay.md).\n");
    }
    return bad || fflush(stdout) != 0 ? ggprof_fail(GGPROF_EXIT_INTERNAL, "cannot write the output") : 0;
}

int ggprof_cmd_replay(int argc, char **argv) {
    replay_opts o = { NULL, NULL, NULL, 0, 20, GGPROF_FMT_TABLE };
    int rc = replay_parse(&o, argc, argv);
    if (rc) return rc;
    sqlite3 *db;
    char why[512], tbo[PATH_MAX];
    if ((rc = ggprof_trace_open(o.trace, &db, why, sizeof(why))) != 0) return ggprof_fail(rc, "%s", why);
    ggprof_cases c;
    if (ggprof_cases_load(db, o.min_share, &c, why, sizeof(why)) != 0) {
        sqlite3_close(db);
        return ggprof_fail(GGPROF_EXIT_USAGE, "'%s': %s", o.trace, why);
    }
    if (o.n > 0 && c.n > (size_t) o.n) c.n = (size_t) o.n;
    replay_result *res = calloc(c.n ? c.n : 1, sizeof(*res));
    rc = !res ? ggprof_fail(GGPROF_EXIT_INTERNAL, "out of memory")
         : c.n == 0 ? ggprof_fail(GGPROF_EXIT_USAGE, "'%s' has no op case test-backend-ops can replay", o.trace)
                    : pick_tbo(db, o.tbo, tbo, sizeof(tbo));
    /* One test-backend-ops run per backend the cases ran on, in the order they first appear. */
    for (size_t i = 0; !rc && i < c.n; i++) {
        size_t first = 0;
        while (!o.backend && strcmp(c.v[first].backend, c.v[i].backend) != 0) first++;
        if (o.backend ? i == 0 : first == i) {
            rc = replay_backend(tbo, o.backend ? o.backend : c.v[i].backend, &c, o.backend ? NULL : c.v[i].backend, res);
        }
    }
    if (!rc) {
        replay_store(db, o.trace, &c, res, o.backend);
        rc = replay_print(&c, res, o.backend, o.format);
        for (size_t i = 0; i < c.n_skip; i++) {
            char safe[256];
            fprintf(stderr, "# skipped %s (%s): %lld runs, %.1f%%\n", ggprof_text_safe(c.skip[i].what, safe, sizeof(safe)),
                    c.skip[i].why,
                    (long long) c.skip[i].count, c.skip[i].share);
        }
    }
    free(res);
    ggprof_cases_free(&c);
    sqlite3_close(db);
    return rc;
}
