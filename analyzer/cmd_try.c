/* ggprof try: reruns a trace's command with each finding's change applied, in alternating pairs under `ggprof
 * record`, and measures what the change saves, with a 95% interval and a verdict (docs/try.md). */
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "accounting.h"
#include "analyzer_commands.h"
#include "cli.h"
#include "findings.h"
#include "progress.h"
#include "rerun_env.h"
#include "sql.h"
#include "trace.h"
#include "v3_format.h"

const char ggprof_usage_try[] =
    "usage: ggprof try TRACE " GGPROF_HELP_SYNOPSIS "\n"
    "\n"
    "Reruns the command recorded in TRACE (same binary, arguments, working directory and the environment\n"
    "variables record kept) with each finding's change applied (report's findings whose advice is one change\n"
    "of options: -t, -ub, -b, -ngl), and measures what the change saves. Each trial runs pairs of runs, the\n"
    "recorded command (baseline) and the changed one, their order alternating from pair to pair (AB BA AB...),\n"
    "each under 'ggprof record' at the trace's level into a temporary folder, the workload's own output into\n"
    "files there. It stops once the 95% interval of the saving clears zero (after 3 pairs at least) or after\n"
    "--pairs pairs. A first baseline run, not counted, warms the caches and checks that the command still runs.\n"
    "\n"
    "Per trial: the saving of the part of the run the rule names (compute for the thread and batch rules) and\n"
    "of the whole run, each the mean of the pairs' differences with its 95% interval (Student's t on the\n"
    "differences), and a verdict: confirmed (the interval is above zero), refuted (below zero: the change\n"
    "costs time here) or inconclusive; then where the time moved between the median runs: their accounting\n"
    "categories, and 'ggprof diff' of the two, op by op.\n"
    "\n"
    "It runs only the command of the trace given, and only on your word: it prints the commands first, asks\n"
    "on a terminal (y/N) and refuses without one unless --yes; a trace recorded by another user or on another\n"
    "machine (or a file you do not own) is refused unless --yes. Nothing of the trace goes through a shell.\n"
    "Programs: llama-completion, llama-cli, llama-bench, whisper-cli (llama-server: its requests cannot be\n"
    "replayed, the trace holds their batches, not their bodies).\n"
    "\n" GGPROF_HELP_OPTIONS
    "Exit status: 0; 1 when a rerun failed (its status said) or on an internal error; 2 for a usage mistake, a\n"
    "trace whose command cannot be rerun, or a run refused; 130 on Ctrl-C (143 on SIGTERM), every child ended.\n"
    "More: docs/try.md.\n";

#define TRY_MIN_PAIRS     3
#define TRY_DEFAULT_PAIRS 10
#define TRY_MAX_PAIRS     100
/* SIGTERM lets `ggprof record` end the workload and close its trace; a group still there after this is killed. */
#define TRY_TERM_GRACE_MS 5000

typedef struct {
    char **v;
    int    n;
} strv;

typedef struct {
    const char *trace, *rule, *format;
    long        pairs;
    int         dry_run, yes, json;
} try_opts;

/* The command the trace recorded, as record stored it (meta argv, cwd, env, uid, hostname, machine_id). */
typedef struct {
    strv  argv, env; /* env: NAME=VALUE */
    char *cwd, *level, *hostname, *machine_id;
    long  uid;       /* -1: not recorded */
    char  self[PATH_MAX];
} try_cmd;

/* One trial's runs: per pair, the part the rule names and the whole run, baseline [0] and changed [1]. */
typedef struct {
    const ggprof_finding *f;
    strv                  argv;   /* the changed command */
    const char           *part;   /* "compute", "host_gaps"... or "wall" */
    int64_t              *part_ns[2], *wall_ns[2];
    int                   n;      /* pairs done */
    char                  dir[PATH_MAX];
    char                  error[512];
    int                   failed_side; /* with error: 0 the baseline failed (every trial would), 1 the changed */
    double                mean, lo, hi, wmean, wlo, whi;
    const char           *verdict;
} try_trial;

static volatile sig_atomic_t g_stop; /* the signal that asks try to stop (SIGINT, SIGTERM, SIGHUP) */

static void on_stop(int sig) { g_stop = sig; }

/* ------------------------------------------------------------ small helpers */

static void strv_free(strv *s) {
    for (int i = 0; i < s->n; i++) free(s->v[i]);
    free(s->v);
    s->v = NULL;
    s->n = 0;
}

static int strv_push(strv *s, const char *a) {
    char **v = realloc(s->v, (size_t) (s->n + 2) * sizeof(*v));
    if (!v) return -1;
    s->v = v;
    if (!(v[s->n] = strdup(a))) return -1;
    v[++s->n] = NULL;
    return 0;
}

static char *meta(sqlite3 *db, const char *key) {
    sqlite3_stmt *st = NULL;
    char         *v  = NULL;
    if (ggprof_sql_prepare(db, "SELECT value FROM meta WHERE key = ?1", &st, NULL, 0) != GGPROF_SQL_OK) return NULL;
    sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0)) v = strdup((const char *) sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    return v;
}

/* An argument as a shell would need it, for display only (nothing here goes through a shell): bare when it holds
 * only safe characters, else in single quotes; control characters written out (ggprof_text_safe). */
static void put_arg(FILE *f, const char *a) {
    char safe[8192];
    const char *s = ggprof_text_safe(a, safe, sizeof(safe));
    if (*s && strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+@%") == strlen(s)) {
        fputs(s, f);
        return;
    }
    fputc('\'', f);
    for (; *s; s++) {
        if (*s == '\'') fputs("'\\''", f);
        else fputc(*s, f);
    }
    fputc('\'', f);
}

static void put_cmd(FILE *f, const strv *a) {
    for (int i = 0; i < a->n; i++) {
        if (i) fputc(' ', f);
        put_arg(f, a->v[i]);
    }
}

static void put_json_argv(FILE *f, const strv *a) {
    fputc('[', f);
    for (int i = 0; i < a->n; i++) {
        if (i) fputs(", ", f);
        ggprof_json_put(f, a->v[i], 0);
    }
    fputc(']', f);
}

static const char *base_name(const char *p) {
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

/* ------------------------------------------------------------ the recorded command */

/* The meta JSON array of strings (argv) into out; -1 when it is not one. */
static int parse_argv(const char *json, strv *out) {
    cJSON *a = cJSON_Parse(json);
    int    rc = cJSON_IsArray(a) && cJSON_GetArraySize(a) > 0 ? 0 : -1;
    for (cJSON *e = a ? a->child : NULL; e && !rc; e = e->next) {
        rc = cJSON_IsString(e) && strlen(e->valuestring) < 65536 ? strv_push(out, e->valuestring) : -1;
    }
    cJSON_Delete(a);
    return rc;
}

/* The meta JSON object of strings (env) as NAME=VALUE into out, only the names a rerun keeps (a trace is data: it
 * cannot set LD_AUDIT or anything else outside schema/rerun_env.h's list). -1 when it is not such an object. */
static int parse_env(const char *json, strv *out) {
    cJSON *o = cJSON_Parse(json);
    int    rc = cJSON_IsObject(o) ? 0 : -1;
    for (cJSON *e = o ? o->child : NULL; e && !rc; e = e->next) {
        if (!cJSON_IsString(e) || !e->string || strchr(e->string, '=')) {
            rc = -1;
            break;
        }
        if (!ggprof_rerun_env_kept(e->string, strlen(e->string))) continue;
        size_t len = strlen(e->string) + strlen(e->valuestring) + 2;
        char  *kv  = malloc(len);
        if (!kv) rc = -1;
        else {
            snprintf(kv, len, "%s=%s", e->string, e->valuestring);
            rc = strv_push(out, kv);
            free(kv);
        }
    }
    cJSON_Delete(o);
    return rc;
}

static int load_cmd(sqlite3 *db, const char *trace, try_cmd *c) {
    char *argv = meta(db, "argv"), *env = meta(db, "env"), *uid = meta(db, "uid");
    int   rc   = 0;
    c->cwd = meta(db, "cwd"), c->level = meta(db, "level");
    c->hostname = meta(db, "hostname"), c->machine_id = meta(db, "machine_id");
    c->uid = uid ? strtol(uid, NULL, 10) : -1;
    if (!argv || !c->cwd) {
        char *cmd = meta(db, "command");
        rc = ggprof_fail(GGPROF_EXIT_USAGE, "'%s' does not hold its command's arguments (%s): it cannot be rerun; "
                         "record it again with this ggprof", trace, cmd ? "recorded by an older ggprof" : "not written by 'ggprof record'");
        free(cmd);
    } else if (parse_argv(argv, &c->argv) != 0 || (env && parse_env(env, &c->env) != 0)) {
        rc = ggprof_fail(GGPROF_EXIT_USAGE, "'%s': its meta 'argv' or 'env' is not what 'ggprof record' writes", trace);
    }
    if (!rc && (!c->level || (strcmp(c->level, "graph") && strcmp(c->level, "split") && strcmp(c->level, "op")))) {
        free(c->level);
        c->level = strdup("op");
    }
    free(argv);
    free(env);
    free(uid);
    return rc;
}

/* The programs try knows the options of; any other gets one line saying why it cannot be tried. */
static int check_program(const try_cmd *c) {
    static const char *const known[] = { "llama-completion", "llama-cli", "llama-bench", "whisper-cli" };
    const char *name = base_name(c->argv.v[0]);
    for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++) {
        if (strcmp(name, known[i]) == 0) return 0;
    }
    char safe[256];
    if (strcmp(name, "llama-server") == 0) {
        return ggprof_fail(GGPROF_EXIT_USAGE, "llama-server cannot be tried: its requests cannot be replayed (the "
                           "trace holds their llama_decode batches, not the requests' bodies); try the same model and "
                           "options with llama-completion or llama-bench");
    }
    return ggprof_fail(GGPROF_EXIT_USAGE, "'%s' cannot be tried: try knows the options of llama-completion, llama-cli, "
                       "llama-bench and whisper-cli only", ggprof_text_safe(name, safe, sizeof(safe)));
}

/* path as the command would find it: relative to the recorded working directory. */
static void at_cwd(const try_cmd *c, const char *path, char *out, size_t len) {
    if (path[0] == '/') snprintf(out, len, "%s", path);
    else snprintf(out, len, "%s/%s", c->cwd, path);
}

static const char *env_of(const try_cmd *c, const char *name) {
    size_t n = strlen(name);
    for (int i = 0; i < c->env.n; i++) {
        if (strncmp(c->env.v[i], name, n) == 0 && c->env.v[i][n] == '=') return c->env.v[i] + n + 1;
    }
    return NULL;
}

/* The binary (by the recorded PATH when the command named none) and the model files must still be there. */
static int check_gone(const try_cmd *c, const char *trace) {
    char path[PATH_MAX * 2], safe[PATH_MAX];
    struct stat st;
    if (stat(c->cwd, &st) != 0 || !S_ISDIR(st.st_mode)) {
        return ggprof_fail(GGPROF_EXIT_USAGE, "the command of '%s' is gone: its working directory '%s' no longer exists",
                           trace, ggprof_text_safe(c->cwd, safe, sizeof(safe)));
    }
    const char *prog = c->argv.v[0];
    int found = 0;
    if (strchr(prog, '/')) {
        at_cwd(c, prog, path, sizeof(path));
        found = access(path, X_OK) == 0;
    } else {
        const char *p = env_of(c, "PATH");
        while (p && *p && !found) {
            size_t n = strcspn(p, ":");
            snprintf(path, sizeof(path), "%.*s/%s", (int) n, p, prog);
            found = n && access(path, X_OK) == 0 && stat(path, &st) == 0 && S_ISREG(st.st_mode);
            p += n + (p[n] == ':');
        }
    }
    if (!found) {
        return ggprof_fail(GGPROF_EXIT_USAGE, "the command of '%s' is gone: '%s' no longer exists (or is not executable)",
                           trace, ggprof_text_safe(prog, safe, sizeof(safe)));
    }
    for (int i = 1; i < c->argv.n; i++) {
        const char *a = c->argv.v[i], *model = NULL;
        if ((strcmp(a, "-m") == 0 || strcmp(a, "--model") == 0) && i + 1 < c->argv.n) model = c->argv.v[i + 1];
        else if (strncmp(a, "--model=", 8) == 0) model = a + 8;
        /* the input files: whisper-cli's audio, llama-completion's prompt file */
        else if ((strcmp(a, "-f") == 0 || strcmp(a, "--file") == 0) && i + 1 < c->argv.n) model = c->argv.v[i + 1];
        /* llama-bench takes a comma list of models */
        while (model && *model) {
            size_t n = strcspn(model, ",");
            char one[PATH_MAX];
            snprintf(one, sizeof(one), "%.*s", (int) n, model);
            at_cwd(c, one, path, sizeof(path));
            if (access(path, R_OK) != 0) {
                return ggprof_fail(GGPROF_EXIT_USAGE, "the command of '%s' is gone: its %s '%s' no longer exists", trace,
                                   a[1] == 'f' || a[2] == 'f' ? "input file" : "model", ggprof_text_safe(one, safe, sizeof(safe)));
            }
            model += n + (model[n] == ',');
        }
    }
    return 0;
}

/* Whether the trace is the user's own: the file, the uid that recorded it, the machine. why: what is not. */
static int own_trace(const try_cmd *c, const char *trace, char *why, size_t len) {
    struct stat st;
    char host[256] = "", mid[64] = "";
    if (stat(trace, &st) == 0 && st.st_uid != getuid()) {
        snprintf(why, len, "the file belongs to uid %u", (unsigned) st.st_uid);
        return 0;
    }
    if (c->uid < 0) {
        snprintf(why, len, "it does not say who recorded it");
        return 0;
    }
    if (c->uid != (long) getuid()) {
        snprintf(why, len, "it was recorded by uid %ld", c->uid);
        return 0;
    }
    FILE *f = fopen("/etc/machine-id", "r");
    if (f) {
        if (fgets(mid, sizeof(mid), f)) mid[strcspn(mid, "\n")] = '\0';
        fclose(f);
    }
    gethostname(host, sizeof(host) - 1);
    if ((c->machine_id && *mid && strcmp(c->machine_id, mid) != 0) || (c->hostname && strcmp(c->hostname, host) != 0)) {
        char safe[256];
        snprintf(why, len, "it was recorded on another machine ('%s')",
                 ggprof_text_safe(c->hostname ? c->hostname : "?", safe, sizeof(safe)));
        return 0;
    }
    return 1;
}

/* ------------------------------------------------------------ the change */

/* llama.cpp's spellings of one option; a change replaces any of them (and their --opt=value forms). */
static const char *const *aliases_of(const char *flag) {
    static const char *const k_aliases[][4] = {
        { "-t", "--threads", NULL },
        { "-ub", "--ubatch-size", NULL },
        { "-b", "--batch-size", NULL },
        { "-ngl", "--n-gpu-layers", "--gpu-layers", NULL },
    };
    for (size_t i = 0; i < sizeof(k_aliases) / sizeof(k_aliases[0]); i++) {
        for (int k = 0; k_aliases[i][k]; k++) {
            if (strcmp(k_aliases[i][k], flag) == 0) return k_aliases[i];
        }
    }
    return NULL;
}

/* The recorded argv with the change applied: each option replaced where it is given (in whichever spelling), else
 * appended. */
static int apply_change(const strv *in, const ggprof_change *ch, strv *out) {
    strv cur = { NULL, 0 };
    for (int i = 0; i < in->n; i++) {
        if (strv_push(&cur, in->v[i])) return -1;
    }
    for (int k = 0; k < ch->n && k < GGPROF_CHANGE_MAX; k++) {
        const char *flag = ch->opt[k].flag, *value = ch->opt[k].value;
        const char *one[2] = { flag, NULL };
        const char *const *names = aliases_of(flag);
        if (!names) names = one;
        strv next  = { NULL, 0 };
        int  found = 0, rc = strv_push(&next, cur.v[0]);
        for (int i = 1; i < cur.n && !rc; i++) {
            const char *a = cur.v[i];
            int hit = 0;
            for (int j = 0; names[j] && !hit; j++) {
                size_t n = strlen(names[j]);
                if (strcmp(a, names[j]) == 0 && i + 1 < cur.n) {
                    rc  = strv_push(&next, a) || strv_push(&next, value);
                    hit = 2;
                } else if (strncmp(a, names[j], n) == 0 && a[n] == '=') {
                    char kv[256];
                    snprintf(kv, sizeof(kv), "%s=%s", names[j], value);
                    rc  = strv_push(&next, kv);
                    hit = 1;
                }
            }
            if (hit) found = 1, i += hit - 1;
            else rc = strv_push(&next, a);
        }
        if (!found && !rc) rc = strv_push(&next, flag) || strv_push(&next, value);
        strv_free(&cur);
        cur = next;
        if (rc) {
            strv_free(&cur);
            return -1;
        }
    }
    *out = cur;
    return 0;
}

static void put_change(FILE *f, const ggprof_change *ch) {
    for (int k = 0; k < ch->n && k < GGPROF_CHANGE_MAX; k++) {
        if (k) fputc(' ', f);
        put_arg(f, ch->opt[k].flag);
        fputc(' ', f);
        put_arg(f, ch->opt[k].value);
    }
}

/* The part of the run a rule's estimate is about: compute for the rules on threads, batches and placement; the
 * accounting category for the others; the whole run where none fits. */
static const char *part_of(const char *rule) {
    static const char *const k_parts[][2] = {
        { "host_gap", "host_gaps" }, { "graph_build", "graph_build" }, { "copies", "copies" }, { "loading", "wall" },
        { "peak_tensor", "wall" },
    };
    for (size_t i = 0; i < sizeof(k_parts) / sizeof(k_parts[0]); i++) {
        if (strcmp(k_parts[i][0], rule) == 0) return k_parts[i][1];
    }
    return "compute";
}

/* ------------------------------------------------------------ running */

/* The environment of a rerun: this one, less every name a rerun keeps, plus the recorded values of those. */
static char **rerun_environ(const try_cmd *c) {
    extern char **environ;
    size_t n = 0;
    for (char **e = environ; *e; e++) n++;
    char **v = calloc(n + (size_t) c->env.n + 1, sizeof(*v));
    if (!v) return NULL;
    size_t k = 0;
    for (char **e = environ; *e; e++) {
        const char *eq = strchr(*e, '=');
        if (eq && ggprof_rerun_env_kept(*e, (size_t) (eq - *e))) continue;
        v[k++] = *e;
    }
    for (int i = 0; i < c->env.n; i++) v[k++] = c->env.v[i];
    return v;
}

/* Ends a child's process group: SIGTERM (record ends its workload and its trace), SIGKILL after the grace. */
static void end_group(pid_t pid, int *status) {
    kill(-pid, SIGTERM);
    for (int waited = 0;; waited += 20) {
        pid_t w = waitpid(pid, status, WNOHANG);
        if (w == pid || (w < 0 && errno == ECHILD)) break;
        if (waited >= TRY_TERM_GRACE_MS) {
            kill(-pid, SIGKILL);
            waitpid(pid, status, 0);
            break;
        }
        struct timespec ts = { 0, 20000000 };
        nanosleep(&ts, NULL);
    }
    kill(-pid, SIGKILL); /* whatever of the group outlived its leader */
}

/* Runs argv (ggprof's own binary) in its own process group in dir c->cwd with env, stdout and stderr into files
 * (NULL: /dev/null), stdin /dev/null. Returns the exit status as the shell gives it (128+N for signal N), -1 when
 * it could not start, or -2 when a signal asked try to stop (the group ended). */
static int run_child(char *const *argv, char **env, const char *cwd, const char *out, const char *err,
                     ggprof_progress *p, uint64_t done) {
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        setpgid(0, 0);
        int in = open("/dev/null", O_RDONLY);
        int o  = out ? open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600) : open("/dev/null", O_WRONLY);
        int e  = err ? open(err, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600) : open("/dev/null", O_WRONLY);
        if (in < 0 || o < 0 || e < 0 || dup2(in, 0) < 0 || dup2(o, 1) < 0 || dup2(e, 2) < 0) _exit(127);
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        signal(SIGHUP, SIG_DFL);
        if (cwd && chdir(cwd) != 0) _exit(127);
        execve(argv[0], argv, env);
        _exit(127);
    }
    setpgid(pid, pid); /* both sides: the group exists before either goes on */
    int status = 0;
    for (;;) {
        if (g_stop) {
            end_group(pid, &status);
            return -2;
        }
        pid_t w = waitpid(pid, &status, WNOHANG);
        if (w == pid) break;
        if (w < 0 && errno != EINTR) return -1;
        ggprof_progress_update(p, done);
        struct timespec ts = { 0, 20000000 };
        nanosleep(&ts, NULL);
    }
    kill(-pid, SIGKILL); /* nothing of the group outlives its leader (a workload's stray child) */
    return WIFEXITED(status) ? WEXITSTATUS(status) : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 1;
}

typedef struct {
    const try_opts *o;
    try_cmd         cmd;
    char          **env;
    char            tmp[PATH_MAX];
    ggprof_progress prog;
    char            what[160];
    uint64_t        done;
} try_ctx;

/* The wall time and the part's time of one recorded run, from its accounting (summed over its processes). */
static int measure(const char *db_path, const char *part, int64_t *part_ns, int64_t *wall_ns, char *why, size_t len) {
    sqlite3 *db = NULL;
    if (ggprof_trace_open(db_path, &db, why, len) != 0) return -1;
    ggprof_accounting a;
    int rc = ggprof_accounting_load(db, &a, why, len);
    sqlite3_close(db);
    if (rc != 0) return -1;
    *part_ns = *wall_ns = 0;
    size_t plen = strlen(part);
    for (size_t i = 0; i < a.n_procs; i++) {
        const ggprof_acc_proc *p = &a.procs[i];
        *wall_ns += p->wall_ns;
        for (size_t k = 0; k < p->n_cats; k++) {
            const char *name = p->cats[k].name;
            if (strcmp(name, part) == 0 || (strncmp(name, part, plen) == 0 && name[plen] == '.')) *part_ns += p->cats[k].ns;
        }
    }
    if (strcmp(part, "wall") == 0) *part_ns = *wall_ns;
    size_t n_procs = a.n_procs;
    ggprof_accounting_free(&a);
    if (n_procs == 0) {
        snprintf(why, len, "no ggml process in the run's trace");
        return -1;
    }
    return 0;
}

/* One run of argv under `ggprof record` into DIR/NAME.db (its output in NAME.out, NAME.err). 0, -2 (stopped), or
 * the status it failed with (> 0), with why. */
static int record_run(try_ctx *x, const strv *argv, const char *dir, const char *name, char *why, size_t len) {
    char db[PATH_MAX + 64], out[PATH_MAX + 64], err[PATH_MAX + 64];
    snprintf(db, sizeof(db), "%s/%s.db", dir, name);
    snprintf(out, sizeof(out), "%s/%s.out", dir, name);
    snprintf(err, sizeof(err), "%s/%s.err", dir, name);
    strv r = { NULL, 0 };
    const char *head[] = { x->cmd.self, "record", "-q", "--level", x->cmd.level, "-o", db, "--" };
    int rc = 0;
    for (size_t i = 0; i < sizeof(head) / sizeof(head[0]) && !rc; i++) rc = strv_push(&r, head[i]);
    for (int i = 0; i < argv->n && !rc; i++) rc = strv_push(&r, argv->v[i]);
    if (rc) {
        strv_free(&r);
        snprintf(why, len, "out of memory");
        return 1;
    }
    int st = run_child(r.v, x->env, x->cmd.cwd, out, err, &x->prog, x->done);
    strv_free(&r);
    if (st == -2) return -2;
    if (st != 0) {
        /* the status, and the last line the run wrote on stderr (its own, or record's) */
        char last[256] = "", line[256];
        FILE *f = fopen(err, "r");
        while (f && fgets(line, sizeof(line), f)) {
            line[strcspn(line, "\n")] = '\0';
            if (*line) snprintf(last, sizeof(last), "%s", line);
        }
        if (f) fclose(f);
        char safe[512];
        if (st < 0) snprintf(why, len, "'ggprof record' could not be started: %s", strerror(errno));
        else snprintf(why, len, "exited with status %d%s%s%s", st, *last ? " (its last line on stderr: \"" : "",
                      *last ? ggprof_text_safe(last, safe, sizeof(safe)) : "", *last ? "\")" : "");
        return st > 0 ? st : 1;
    }
    return 0;
}

/* ------------------------------------------------------------ statistics */

/* Student's t quantile 0.975 for df degrees of freedom. */
static double t975(int df) {
    static const double t[] = { 0, 12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
                                2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086 };
    if (df < 1) return INFINITY;
    if (df <= 20) return t[df];
    return 1.96 + 2.5 / df; /* within 0.003 of the table from 21 on */
}

/* The mean of b[i] - c[i] and its 95% interval (t on the differences). */
static void interval(const int64_t *b, const int64_t *c, int n, double *mean, double *lo, double *hi) {
    double s = 0, ss = 0;
    for (int i = 0; i < n; i++) s += (double) (b[i] - c[i]);
    *mean = n ? s / n : 0;
    for (int i = 0; i < n; i++) ss += ((double) (b[i] - c[i]) - *mean) * ((double) (b[i] - c[i]) - *mean);
    double half = n > 1 ? t975(n - 1) * sqrt(ss / (n - 1)) / sqrt((double) n) : INFINITY;
    *lo = *mean - half;
    *hi = *mean + half;
}

static const char *verdict_of(double lo, double hi) {
    return lo > 0 ? "confirmed" : hi < 0 ? "refuted" : "inconclusive";
}

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *) a, y = *(const int64_t *) b;
    return x < y ? -1 : x > y;
}

/* The index of the run whose value is the median (the lower of the middle two). */
static int median_run(const int64_t *v, int n) {
    int64_t *s = malloc((size_t) n * sizeof(*s));
    if (!s) return 0;
    memcpy(s, v, (size_t) n * sizeof(*s));
    qsort(s, (size_t) n, sizeof(*s), cmp_i64);
    int64_t m = s[(n - 1) / 2];
    free(s);
    for (int i = 0; i < n; i++) {
        if (v[i] == m) return i;
    }
    return 0;
}

static double ms(double ns) { return ns / 1e6; }
static int64_t clamp_ns(double v) { return isfinite(v) ? (int64_t) llround(v) : v > 0 ? INT64_MAX : INT64_MIN; }

/* ------------------------------------------------------------ a trial */

/* Pairs until the part's interval clears zero (after TRY_MIN_PAIRS) or o->pairs are spent. 0, -2 (stopped), or
 * 1 when a run failed (t->error says how). */
static int trial_run(try_ctx *x, try_trial *t, const strv *base) {
    const try_opts *o = x->o;
    for (int k = 0; k < 2; k++) {
        t->part_ns[k] = calloc((size_t) o->pairs, sizeof(int64_t));
        t->wall_ns[k] = calloc((size_t) o->pairs, sizeof(int64_t));
        if (!t->part_ns[k] || !t->wall_ns[k]) return snprintf(t->error, sizeof(t->error), "out of memory"), 1;
    }
    for (int i = 0; i < o->pairs; i++) {
        for (int j = 0; j < 2; j++) {
            int  side = (i & 1) ^ j; /* AB, then BA: a drift of the machine falls on both sides alike */
            char name[64], why[400];
            snprintf(name, sizeof(name), "%s-%d", side ? "changed" : "baseline", i + 1);
            snprintf(x->what, sizeof(x->what), "try: %s, pair %d of at most %ld", t->f->rule, i + 1, o->pairs);
            int rc = record_run(x, side ? &t->argv : base, t->dir, name, why, sizeof(why));
            x->done++;
            if (rc == -2) return -2;
            if (rc) {
                snprintf(t->error, sizeof(t->error), "the %s run of pair %d %s", side ? "changed" : "baseline", i + 1, why);
                t->failed_side = side;
                return 1;
            }
            char db[PATH_MAX + 80];
            snprintf(db, sizeof(db), "%s/%s.db", t->dir, name);
            if (measure(db, t->part, &t->part_ns[side][i], &t->wall_ns[side][i], why, sizeof(why)) != 0) {
                snprintf(t->error, sizeof(t->error), "the %s run of pair %d: %s", side ? "changed" : "baseline", i + 1, why);
                t->failed_side = side;
                return 1;
            }
        }
        t->n = i + 1;
        interval(t->part_ns[0], t->part_ns[1], t->n, &t->mean, &t->lo, &t->hi);
        if (t->n >= TRY_MIN_PAIRS && (t->lo > 0 || t->hi < 0)) break;
    }
    interval(t->wall_ns[0], t->wall_ns[1], t->n, &t->wmean, &t->wlo, &t->whi);
    t->verdict = verdict_of(t->lo, t->hi);
    return 0;
}

/* `ggprof diff A B` of the median runs, into path (its own output, text or JSON). 0 or -2 (stopped); a diff that
 * fails leaves the file as it is (its error in it). */
static int trial_diff(try_ctx *x, const char *a, const char *b, const char *path) {
    char *argv[] = { x->cmd.self, "diff", (char *) a, (char *) b, "-n", "10", "--format", x->o->json ? "json" : "table",
                     NULL };
    return run_child(argv, x->env, NULL, path, path, &x->prog, x->done) == -2 ? -2 : 0;
}

/* The categories of both median runs' accounting: name, baseline ns, changed ns (JSON) or a table (text). */
static void trial_categories(FILE *f, const char *a, const char *b, int json) {
    ggprof_accounting acc[2];
    sqlite3 *db;
    char why[256];
    int ok[2] = { 0, 0 };
    for (int k = 0; k < 2; k++) {
        db = NULL;
        ok[k] = ggprof_trace_open(k ? b : a, &db, why, sizeof(why)) == 0 && ggprof_accounting_load(db, &acc[k], why, sizeof(why)) == 0;
        sqlite3_close(db);
    }
    if (json) fputs("[", f);
    else fprintf(f, "  where the time moved (the median runs' accounting, ms):\n    %-26s %12s %12s %12s\n", "category",
                 "baseline", "changed", "change");
    int first = 1;
    for (int k = 0; k < 2 && ok[0] && ok[1]; k++) {
        for (size_t p = 0; p < acc[k].n_procs; p++) {
            for (size_t c = 0; c < acc[k].procs[p].n_cats; c++) {
                const char *name = acc[k].procs[p].cats[c].name;
                int seen = 0; /* each name once: from the baseline, or from the changed run when the baseline lacks it */
                for (size_t q = 0; q <= p && !seen; q++) {
                    for (size_t d = 0; d < acc[k].procs[q].n_cats && !seen && (q < p || d < c); d++) {
                        seen = strcmp(acc[k].procs[q].cats[d].name, name) == 0;
                    }
                }
                for (size_t q = 0; k == 1 && q < acc[0].n_procs && !seen; q++) {
                    for (size_t d = 0; d < acc[0].procs[q].n_cats && !seen; d++) seen = strcmp(acc[0].procs[q].cats[d].name, name) == 0;
                }
                if (seen) continue;
                int64_t v[2] = { 0, 0 };
                for (int s = 0; s < 2; s++) {
                    for (size_t q = 0; q < acc[s].n_procs; q++) v[s] += ggprof_accounting_cat(&acc[s].procs[q], name);
                }
                if (json) {
                    fprintf(f, "%s{\"name\": ", first ? "" : ", ");
                    ggprof_json_put(f, name, 0);
                    fprintf(f, ", \"baseline_ns\": %" PRId64 ", \"changed_ns\": %" PRId64 "}", v[0], v[1]);
                } else {
                    char safe[160];
                    fprintf(f, "    %-26s %12.3f %12.3f %+12.3f\n", ggprof_text_safe(name, safe, sizeof(safe)), ms((double) v[0]),
                            ms((double) v[1]), ms((double) (v[1] - v[0])));
                }
                first = 0;
            }
        }
    }
    if (json) fputs("]", f);
    else if (!ok[0] || !ok[1]) fprintf(f, "    (the median runs' accounting cannot be read: %s)\n", why);
    for (int k = 0; k < 2; k++) {
        if (ok[k]) ggprof_accounting_free(&acc[k]);
    }
}

static void copy_file(FILE *f, const char *path, const char *indent) {
    FILE *in = fopen(path, "r");
    char line[4096];
    int bol = 1;
    while (in && fgets(line, sizeof(line), in)) {
        if (bol && indent && *line != '\n') fputs(indent, f);
        fputs(line, f);
        bol = line[strlen(line) - 1] == '\n';
    }
    if (in) fclose(in);
    if (!bol) fputc('\n', f);
}

static void trial_print(FILE *f, try_ctx *x, const try_trial *t, const char *diff_path, const char *a, const char *b) {
    const char *part = t->part;
    fprintf(f, "\n%s: ", t->f->rule);
    put_change(f, &t->f->change);
    fprintf(f, " (at stake %.1f ms)\n  changed command: ", ms((double) t->f->at_stake_ns));
    put_cmd(f, &t->argv);
    fputc('\n', f);
    if (t->error[0]) {
        char safe[600];
        fprintf(f, "  stopped: %s\n", ggprof_text_safe(t->error, safe, sizeof(safe)));
        return;
    }
    double bm = 0, cm = 0, bw = 0, cw = 0;
    for (int i = 0; i < t->n; i++) {
        bm += (double) t->part_ns[0][i], cm += (double) t->part_ns[1][i];
        bw += (double) t->wall_ns[0][i], cw += (double) t->wall_ns[1][i];
    }
    fprintf(f, "  pairs: %d; %s per run: baseline %.1f ms, changed %.1f ms\n", t->n, part, ms(bm / t->n), ms(cm / t->n));
    fprintf(f, "  saved: %.1f ms of %s, 95%% interval %.1f to %.1f ms: %s", ms(t->mean), part, ms(t->lo), ms(t->hi),
            t->verdict ? t->verdict : "inconclusive");
    if (t->mean > 0 && t->f->at_stake_ns > 0) fprintf(f, " (at stake / saved: %.2f)", (double) t->f->at_stake_ns / t->mean);
    fprintf(f, "\n  whole run: baseline %.1f ms, changed %.1f ms; saved %.1f ms, 95%% interval %.1f to %.1f ms: %s\n",
            ms(bw / t->n), ms(cw / t->n), ms(t->wmean), ms(t->wlo), ms(t->whi), verdict_of(t->wlo, t->whi));
    fprintf(f, "  each pair's saving of %s (ms):", part);
    for (int i = 0; i < t->n; i++) fprintf(f, " %.1f", ms((double) (t->part_ns[0][i] - t->part_ns[1][i])));
    fputc('\n', f);
    if (!a) return;
    trial_categories(f, a, b, 0);
    fprintf(f, "  op by op (ggprof diff of the median runs: A the baseline, B the changed):\n");
    copy_file(f, diff_path, "    ");
    (void) x;
}

static void trial_json(FILE *f, const try_trial *t, const char *diff_path, const char *a, const char *b, int first) {
    fprintf(f, "%s\n    {\"rule\": ", first ? "" : ",");
    ggprof_json_put(f, t->f->rule, 0);
    fputs(", \"change\": ", f);
    ggprof_change_json(f, &t->f->change, 0);
    fputs(", \"command\": ", f);
    put_json_argv(f, &t->argv);
    fprintf(f, ",\n     \"part\": \"%s\", \"pairs\": %d, \"at_stake_ns\": %" PRId64, t->part, t->n, t->f->at_stake_ns);
    if (t->n && !t->error[0]) {
        double b0 = 0, c0 = 0, bw = 0, cw = 0;
        for (int i = 0; i < t->n; i++) {
            b0 += (double) t->part_ns[0][i], c0 += (double) t->part_ns[1][i];
            bw += (double) t->wall_ns[0][i], cw += (double) t->wall_ns[1][i];
        }
        fprintf(f, ", \"realized_ns\": %" PRId64 ", \"realized_low_ns\": %" PRId64 ", \"realized_high_ns\": %" PRId64
                   ", \"verdict\": \"%s\", \"baseline_ns\": %" PRId64 ", \"changed_ns\": %" PRId64,
                clamp_ns(t->mean), clamp_ns(t->lo), clamp_ns(t->hi), t->verdict ? t->verdict : "failed",
                clamp_ns(b0 / t->n), clamp_ns(c0 / t->n));
        fprintf(f, ",\n     \"wall\": {\"realized_ns\": %" PRId64 ", \"realized_low_ns\": %" PRId64 ", \"realized_high_ns\": %"
                   PRId64 ", \"verdict\": \"%s\", \"baseline_ns\": %" PRId64 ", \"changed_ns\": %" PRId64 "}",
                clamp_ns(t->wmean), clamp_ns(t->wlo), clamp_ns(t->whi), verdict_of(t->wlo, t->whi), clamp_ns(bw / t->n),
                clamp_ns(cw / t->n));
        fputs(",\n     \"pairs_ns\": [", f);
        for (int i = 0; i < t->n; i++) {
            fprintf(f, "%s{\"baseline_ns\": %" PRId64 ", \"changed_ns\": %" PRId64 ", \"baseline_wall_ns\": %" PRId64
                       ", \"changed_wall_ns\": %" PRId64 "}", i ? ", " : "", t->part_ns[0][i], t->part_ns[1][i],
                    t->wall_ns[0][i], t->wall_ns[1][i]);
        }
        fputs("]", f);
    } else {
        fputs(", \"verdict\": \"failed\"", f);
    }
    if (t->error[0]) {
        fputs(", \"error\": ", f);
        ggprof_json_put(f, t->error, 0);
    }
    if (a) {
        fputs(",\n     \"categories\": ", f);
        trial_categories(f, a, b, 1);
        /* diff's own JSON object, as it wrote it; null when it failed (then its file holds no object) */
        FILE *in = fopen(diff_path, "r");
        int   c0 = in ? fgetc(in) : EOF;
        if (in) fclose(in);
        fputs(",\n     \"diff\": ", f);
        if (c0 == '{') {
            copy_file(f, diff_path, NULL);
            fputs("     ", f);
        } else {
            fputs("null", f);
        }
    }
    fputs("}", f);
}

/* ------------------------------------------------------------ the command */

static int try_parse(try_opts *o, int argc, char **argv) {
    const ggprof_opt opts[] = {
        { "--rule", NULL, GGPROF_OPT_STRING, &o->rule, NULL, "R", "try only rule R's finding (default: every finding "
          "whose advice is one change of options)" },
        { "--pairs", NULL, GGPROF_OPT_COUNT, &o->pairs, NULL, "N",
          "at most N pairs a trial (default 10, at least 3): a 1 s run takes about a minute a trial" },
        { "--format", NULL, GGPROF_OPT_STRING, &o->format, NULL, "text|json",
          "text (default) or json: {\"trials\": [{\"rule\", \"change\", \"pairs\", \"at_stake_ns\", \"realized_ns\", "
          "\"realized_low_ns\", \"realized_high_ns\", \"verdict\", \"baseline_ns\", \"changed_ns\", ...}], \"command\": [...]}" },
        { "--dry-run", NULL, GGPROF_OPT_FLAG, &o->dry_run, NULL, NULL,
          "print the commands (the baseline and each changed one) and run nothing" },
        { "--yes", "-y", GGPROF_OPT_FLAG, &o->yes, NULL, NULL,
          "run without asking, also a trace recorded by another user or on another machine" },
    };
    const char *pos[1] = { NULL };
    ggprof_args a = { opts, (int) (sizeof(opts) / sizeof(opts[0])), pos, 1, 0, "one trace only ('%s' is a second)", 0, 0, NULL };
    int rc = ggprof_parse_args(argc, argv, &a);
    if (rc) return rc;
    if (!pos[0]) return ggprof_fail(GGPROF_EXIT_USAGE, "needs a trace; usage: ggprof try TRACE [--rule R] [--dry-run]");
    o->trace = pos[0];
    if (strcmp(o->format, "text") == 0) o->json = 0;
    else if (strcmp(o->format, "json") == 0) o->json = 1;
    else return ggprof_fail(GGPROF_EXIT_USAGE, "unknown format '%s'; expected text or json", o->format);
    if (o->pairs < TRY_MIN_PAIRS || o->pairs > TRY_MAX_PAIRS) {
        return ggprof_fail(GGPROF_EXIT_USAGE, "--pairs '%ld': expected %d to %d", o->pairs, TRY_MIN_PAIRS, TRY_MAX_PAIRS);
    }
    return 0;
}

/* The findings to try: those with a change (and rule R's only, with --rule). */
static int pick(const try_opts *o, const ggprof_findings *f, const ggprof_finding **v, size_t *n) {
    *n = 0;
    int fired = 0;
    for (size_t i = 0; i < f->n; i++) {
        if (o->rule && strcmp(o->rule, f->v[i].rule) != 0) continue;
        fired = 1;
        if (f->v[i].change.n > 0) v[(*n)++] = &f->v[i];
    }
    if (o->rule && !fired) {
        char list[512] = "";
        size_t p = 0;
        for (size_t i = 0; i < f->n && p < sizeof(list); i++) p += (size_t) snprintf(list + p, sizeof(list) - p, "%s%s", i ? ", " : "", f->v[i].rule);
        return ggprof_fail(GGPROF_EXIT_USAGE, "--rule '%s' did not fire on '%s' (what fired: %s)", o->rule, o->trace,
                           f->n ? list : "nothing");
    }
    if (o->rule && !*n) {
        return ggprof_fail(GGPROF_EXIT_USAGE, "--rule '%s': its advice is no single change of options; nothing to try", o->rule);
    }
    return 0;
}

static void print_plan(FILE *f, const try_ctx *x, const strv *base, const try_trial *t, size_t n, const char *notyours) {
    fprintf(f, "%s: %zu trial%s of %d to %ld pairs, each run under 'ggprof record --level %s' in '", x->o->trace, n,
            n == 1 ? "" : "s", TRY_MIN_PAIRS, x->o->pairs, x->cmd.level);
    put_arg(f, x->cmd.cwd);
    fputs("'\n  baseline: ", f);
    put_cmd(f, base);
    fputc('\n', f);
    for (size_t i = 0; i < n; i++) {
        fprintf(f, "  %s: ", t[i].f->rule);
        put_cmd(f, &t[i].argv);
        fputc('\n', f);
    }
    if (x->cmd.env.n) {
        fputs("  environment:", f);
        for (int i = 0; i < x->cmd.env.n; i++) {
            fputc(' ', f);
            put_arg(f, x->cmd.env.v[i]);
        }
        fputc('\n', f);
    }
    if (notyours) fprintf(f, "  not your own trace: %s\n", notyours);
}

/* Asks on the terminal, or refuses: the trace's command runs only on the user's word. */
static int consent(const try_opts *o, const char *notyours) {
    if (o->yes) return 0;
    if (notyours) {
        return ggprof_fail(GGPROF_EXIT_USAGE, "'%s' is not your own trace (%s): its command is not run without --yes",
                           o->trace, notyours);
    }
    if (!isatty(STDIN_FILENO) || !isatty(STDERR_FILENO)) {
        return ggprof_fail(GGPROF_EXIT_USAGE, "not run: without a terminal to ask on, running the trace's command needs --yes");
    }
    fputs("ggprof: try: run these commands? [y/N] ", stderr);
    fflush(stderr);
    char line[16];
    if (!fgets(line, sizeof(line), stdin) || (strcmp(line, "y\n") != 0 && strcmp(line, "yes\n") != 0 && strcmp(line, "Y\n") != 0)) {
        return ggprof_fail(GGPROF_EXIT_USAGE, "not run");
    }
    return 0;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void) st, (void) flag, (void) ftw;
    remove(path);
    return 0;
}

static void rm_tree(const char *dir) {
    if (*dir) nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static int try_main(try_ctx *x, try_trial *t, size_t n, const strv *base) {
    const try_opts *o = x->o;
    FILE *f = stdout;
    int   rc = 0, first = 1;
    uint64_t total = (uint64_t) (1 + 2 * (size_t) o->pairs * n); /* runs at most: a trial that stops early skips some */
    ggprof_progress_start(&x->prog, x->what, total);
    /* The warm-up: caches filled, and a command that no longer runs said before any trial. */
    snprintf(x->what, sizeof(x->what), "try: a first baseline run (warm-up)");
    char why[400];
    int  w = record_run(x, base, x->tmp, "warmup", why, sizeof(why));
    x->done++;
    if (w == -2) return -2;
    if (w) {
        ggprof_progress_end(&x->prog);
        return ggprof_fail(GGPROF_EXIT_INTERNAL, "the recorded command fails now: the warm-up run %s; nothing tried", why);
    }
    if (o->json) {
        fputs("{\"command\": ", f);
        put_json_argv(f, base);
        fputs(",\n \"trials\": [", f);
    } else {
        fputs("command: ", f);
        put_cmd(f, base);
        fputc('\n', f);
    }
    for (size_t i = 0; i < n && !rc; i++) {
        try_trial *tr = &t[i];
        snprintf(tr->dir, sizeof(tr->dir), "%s/trial-%zu", x->tmp, i + 1);
        if (mkdir(tr->dir, 0700) != 0) {
            ggprof_progress_end(&x->prog);
            return ggprof_fail(GGPROF_EXIT_INTERNAL, "cannot create '%s': %s", tr->dir, strerror(errno));
        }
        int r = trial_run(x, tr, base);
        if (r == -2) return -2;
        char a[PATH_MAX + 80] = "", b[PATH_MAX + 80] = "", diff_path[PATH_MAX + 80] = "";
        int  have = !r && tr->n > 0;
        if (have) {
            int ia = median_run(tr->part_ns[0], tr->n), ib = median_run(tr->part_ns[1], tr->n);
            snprintf(a, sizeof(a), "%s/baseline-%d.db", tr->dir, ia + 1);
            snprintf(b, sizeof(b), "%s/changed-%d.db", tr->dir, ib + 1);
            snprintf(diff_path, sizeof(diff_path), "%s/diff.out", tr->dir);
            snprintf(x->what, sizeof(x->what), "try: %s, diff of the median runs", tr->f->rule);
            if (trial_diff(x, a, b, diff_path) == -2) return -2;
        }
        if (r) rc = GGPROF_EXIT_INTERNAL, tr->verdict = NULL;
        ggprof_progress_end(&x->prog);
        if (o->json) trial_json(f, tr, diff_path, have ? a : NULL, b, first);
        else trial_print(f, x, tr, diff_path, have ? a : NULL, b);
        first = 0;
        fflush(f);
        rm_tree(tr->dir);
        x->done = 1 + 2 * (uint64_t) o->pairs * (i + 1);
        ggprof_progress_start(&x->prog, x->what, total); /* the line again for the next trial, after the report */
        if (r) {
            ggprof_err("%s: %s", tr->f->rule, tr->error);
            if (tr->failed_side == 0) break; /* the recorded command fails now: the other trials would fail alike */
        }
    }
    if (o->json) fputs("\n ]}\n", f);
    return rc;
}

int ggprof_cmd_try(int argc, char **argv) {
    try_opts o = { NULL, NULL, "text", TRY_DEFAULT_PAIRS, 0, 0, 0 };
    int rc = try_parse(&o, argc, argv);
    if (rc) return rc;
    try_ctx x;
    memset(&x, 0, sizeof(x));
    x.o = &o;
    sqlite3 *db = NULL;
    char why[512];
    if ((rc = ggprof_trace_open(o.trace, &db, why, sizeof(why))) != 0) return ggprof_fail(rc, "%s", why);
    ggprof_findings f = { 0 };
    const ggprof_finding **picked = NULL;
    try_trial *t = NULL;
    size_t n = 0;
    strv base = { NULL, 0 };
    rc = load_cmd(db, o.trace, &x.cmd);
    if (!rc) rc = check_gone(&x.cmd, o.trace);
    if (!rc) rc = check_program(&x.cmd);
    if (!rc && ggprof_findings_run(db, NULL, NULL, &f, why, sizeof(why)) != 0) rc = ggprof_fail(GGPROF_EXIT_INTERNAL, "'%s': %s", o.trace, why);
    if (!rc && !(picked = calloc(f.n + 1, sizeof(*picked)))) rc = ggprof_fail(GGPROF_EXIT_INTERNAL, "out of memory");
    if (!rc) rc = pick(&o, &f, picked, &n);
    if (!rc && !(t = calloc(n + 1, sizeof(*t)))) rc = ggprof_fail(GGPROF_EXIT_INTERNAL, "out of memory");
    for (size_t i = 0; i < n && !rc; i++) {
        t[i].f    = picked[i];
        t[i].part = part_of(picked[i]->rule);
        if (apply_change(&x.cmd.argv, &picked[i]->change, &t[i].argv) != 0) rc = ggprof_fail(GGPROF_EXIT_INTERNAL, "out of memory");
    }
    for (int i = 0; i < x.cmd.argv.n && !rc; i++) rc = strv_push(&base, x.cmd.argv.v[i]) ? ggprof_fail(GGPROF_EXIT_INTERNAL, "out of memory") : 0;
    sqlite3_close(db);
    char notyours_buf[256];
    const char *notyours = !rc && !own_trace(&x.cmd, o.trace, notyours_buf, sizeof(notyours_buf)) ? notyours_buf : NULL;
    if (!rc && n == 0) {
        if (o.json) {
            fputs("{\"command\": ", stdout);
            put_json_argv(stdout, &base);
            fputs(", \"trials\": []}\n", stdout);
        } else {
            printf("nothing to try in '%s': no finding's advice is a single change of options\n", o.trace);
        }
    } else if (!rc && o.dry_run) {
        if (o.json) {
            fputs("{\"dry_run\": true, \"command\": ", stdout);
            put_json_argv(stdout, &base);
            fputs(", \"trials\": [", stdout);
            for (size_t i = 0; i < n; i++) {
                fprintf(stdout, "%s\n  {\"rule\": ", i ? "," : "");
                ggprof_json_put(stdout, t[i].f->rule, 0);
                fprintf(stdout, ", \"at_stake_ns\": %" PRId64 ", \"part\": \"%s\", \"command\": ", t[i].f->at_stake_ns, t[i].part);
                put_json_argv(stdout, &t[i].argv);
                fputs("}", stdout);
            }
            fputs("]}\n", stdout);
        } else {
            print_plan(stdout, &x, &base, t, n, notyours);
        }
    } else if (!rc) {
        print_plan(stderr, &x, &base, t, n, notyours);
        rc = consent(&o, notyours);
        ssize_t len = rc ? -1 : readlink("/proc/self/exe", x.cmd.self, sizeof(x.cmd.self) - 1);
        if (!rc && len <= 0) rc = ggprof_fail(GGPROF_EXIT_INTERNAL, "cannot find ggprof's own binary (/proc/self/exe)");
        if (!rc) {
            x.cmd.self[len] = '\0';
            if (!(x.env = rerun_environ(&x.cmd))) rc = ggprof_fail(GGPROF_EXIT_INTERNAL, "out of memory");
        }
        if (!rc) {
            /* From here a signal stops the runs (their process groups ended) and the temporary folder goes. */
            struct sigaction sa = { 0 };
            sa.sa_handler = on_stop;
            sigemptyset(&sa.sa_mask);
            int sigs[] = { SIGINT, SIGTERM, SIGHUP };
            for (size_t k = 0; k < sizeof(sigs) / sizeof(sigs[0]); k++) sigaction(sigs[k], &sa, NULL);
            const char *tmpdir = getenv("TMPDIR");
            snprintf(x.tmp, sizeof(x.tmp), "%s/ggprof-try.XXXXXX", tmpdir && *tmpdir ? tmpdir : "/tmp");
            if (!mkdtemp(x.tmp)) {
                rc = ggprof_fail(GGPROF_EXIT_INTERNAL, "cannot create a temporary folder '%s': %s", x.tmp, strerror(errno));
                x.tmp[0] = '\0';
            }
        }
        if (!rc) {
            rc = try_main(&x, t, n, &base);
            ggprof_progress_end(&x.prog);
            rm_tree(x.tmp);
            if (rc == -2 || g_stop) {
                fflush(stdout);
                ggprof_err("stopped by signal %d: every run ended, its files removed", (int) g_stop);
                rc = g_stop == SIGINT ? 130 : 128 + (int) g_stop;
            }
        }
    }
    if (!rc && ggprof_close_output(stdout, "stdout") != 0) rc = GGPROF_EXIT_INTERNAL;
    for (size_t i = 0; t && i < n; i++) {
        strv_free(&t[i].argv);
        for (int k = 0; k < 2; k++) free(t[i].part_ns[k]), free(t[i].wall_ns[k]);
    }
    free(t);
    free(picked);
    free(x.env);
    strv_free(&base);
    strv_free(&x.cmd.argv);
    strv_free(&x.cmd.env);
    free(x.cmd.cwd), free(x.cmd.level), free(x.cmd.hostname), free(x.cmd.machine_id);
    ggprof_findings_free(&f);
    return rc;
}
