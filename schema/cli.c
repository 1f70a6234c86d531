/* Error reporting and output checks shared by the subcommands. */
#include "cli.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

const char *ggprof_cmd_name = "ggprof";

static void vreport(const char *fmt, va_list ap) {
    fprintf(stderr, "ggprof: %s: ", ggprof_cmd_name);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
}

void ggprof_err(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vreport(fmt, ap);
    va_end(ap);
}

int ggprof_fail(int code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vreport(fmt, ap);
    va_end(ap);
    return code;
}

int ggprof_is_help(const char *arg) { return strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0; }

int ggprof_close_output(FILE *f, const char *path) {
    int bad = ferror(f);
    int e   = errno;
    if (fclose(f) != 0 && !bad) {
        bad = 1;
        e   = errno;
    }
    if (bad) {
        ggprof_err("cannot write '%s': %s", path, strerror(e));
        return -1;
    }
    return 0;
}

static const ggprof_opt *find_opt(const ggprof_args *a, const char *arg) {
    for (int k = 0; k < a->n_opts; k++) {
        const ggprof_opt *o = &a->opts[k];
        if (strcmp(arg, o->name) == 0 || (o->alias && strcmp(arg, o->alias) == 0)) return o;
    }
    return NULL;
}

static int set_value(const ggprof_opt *o, const char *arg, const char *v) {
    char *end = NULL;
    switch (o->kind) {
    case GGPROF_OPT_STRING: *(const char **) o->dest = v; return 0;
    case GGPROF_OPT_COUNT: {
        long n = strtol(v, &end, 10);
        if (end == v || *end || n < 0) return ggprof_fail(GGPROF_EXIT_USAGE, "%s '%s': expected a count >= 0", arg, v);
        *(long *) o->dest = n;
        return 0;
    }
    case GGPROF_OPT_PERCENT: {
        double d = strtod(v, &end);
        if (end == v || *end || !(d >= 0)) return ggprof_fail(GGPROF_EXIT_USAGE, "%s '%s': expected a percentage >= 0", arg, v);
        *(double *) o->dest = d;
        return 0;
    }
    case GGPROF_OPT_CALL: return o->call(o->dest, arg, v);
    }
    return ggprof_fail(GGPROF_EXIT_INTERNAL, "internal: option %s has no kind", arg);
}

static int bad_window(const char *arg, const char *v, const char *expected) {
    return ggprof_fail(GGPROF_EXIT_USAGE, "%s '%s': expected %s", arg, v, expected);
}

static int is_window_opt(const char *arg) {
    static const char *const k[] = { "--from", "--to", "--graphs", "--process", "--window" };
    for (size_t i = 0; i < sizeof(k) / sizeof(k[0]); i++) {
        if (strcmp(arg, k[i]) == 0) return 1;
    }
    return 0;
}

/* One of the window options into w: 1 when arg is none of them, 0 when parsed, else the exit code. */
static int window_opt(ggprof_window_opts *w, const char *arg, const char *v) {
    char *end = NULL;
    if (strcmp(arg, "--from") == 0 || strcmp(arg, "--to") == 0) {
        double d = strtod(v, &end);
        if (end == v || *end || !(d >= 0) || d > 1e9) return bad_window(arg, v, "seconds >= 0 from the trace's start (e.g. 2.5)");
        if (arg[2] == 'f') w->has_from = 1, w->from_s = d;
        else w->has_to = 1, w->to_s = d;
    } else if (strcmp(arg, "--graphs") == 0) {
        long long lo = strtoll(v, &end, 10), hi = lo;
        if (end != v && *end == '-' && end[1]) {
            const char *h = end + 1;
            hi = strtoll(h, &end, 10);
            if (end == h) end = (char *) v;
        }
        if (end == v || *end || lo < 0 || hi < lo) return bad_window(arg, v, "graph ids A-B with 0 <= A <= B, or one id");
        w->has_graphs = 1, w->graph_lo = lo, w->graph_hi = hi;
    } else if (strcmp(arg, "--process") == 0) {
        long long pid = strtoll(v, &end, 10);
        if (end == v || *end || pid <= 0) return bad_window(arg, v, "a process id (a number > 0)");
        w->has_pid = 1, w->pid = pid;
    } else if (strcmp(arg, "--window") == 0) {
        long n = strtol(v, &end, 10);
        if (end == v || *end || n <= 0) return bad_window(arg, v, "a capture window's number (1, 2, ...)");
        w->window = n;
    } else {
        return 1;
    }
    w->set = 1;
    return 0;
}

int ggprof_parse_args(int argc, char **argv, ggprof_args *a) {
    a->n_pos = 0;
    int i    = 1, rc;
    for (; i < argc; i++) {
        const char *arg = argv[i];
        if (strcmp(arg, "--") == 0) {
            i++;
            break;
        }
        const ggprof_opt *o = arg[0] == '-' && arg[1] ? find_opt(a, arg) : NULL;
        if (o && o->kind == GGPROF_OPT_FLAG) {
            *(int *) o->dest = 1;
        } else if (o) {
            if (i + 1 >= argc) {
                return ggprof_fail(GGPROF_EXIT_USAGE, "%s needs a value; see 'ggprof %s --help'", arg, ggprof_cmd_name);
            }
            if ((rc = set_value(o, arg, argv[++i])) != 0) return rc;
        } else if (a->window && is_window_opt(arg)) {
            if (i + 1 >= argc) {
                return ggprof_fail(GGPROF_EXIT_USAGE, "%s needs a value; see 'ggprof %s --help'", arg, ggprof_cmd_name);
            }
            if ((rc = window_opt(a->window, arg, argv[++i])) != 0) return rc;
        } else if (arg[0] == '-' && arg[1]) {
            return ggprof_fail(GGPROF_EXIT_USAGE, "unknown option '%s'; see 'ggprof %s --help'", arg, ggprof_cmd_name);
        } else if (a->stop_at_positional) {
            break;
        } else if (a->n_pos == a->max_pos) {
            return ggprof_fail(GGPROF_EXIT_USAGE, a->too_many, arg);
        } else {
            a->pos[a->n_pos++] = arg;
        }
    }
    a->next = i;
    return 0;
}
