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

int ggprof_parse_args(int argc, char **argv, ggprof_args *a) {
    a->n_pos = 0;
    int i    = 1;
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
            int rc = set_value(o, arg, argv[++i]);
            if (rc) return rc;
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
