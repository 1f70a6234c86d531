/* Error reporting and output checks shared by the subcommands. */
#include "cli.h"

#include "v3_format.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

const char *ggprof_cmd_name = "ggprof";

/* Every error and note of a command goes out here, escaped whole (ggprof_text_safe): a message quotes names from a
 * trace, paths and the user's values, none of which may send a control character to the terminal. */
static void vreport(const char *fmt, va_list ap) {
    char *msg = NULL;
    if (vasprintf(&msg, fmt, ap) < 0) msg = NULL;
    size_t len = msg ? 4 * strlen(msg) + 1 : 0;
    char *safe = msg ? malloc(len) : NULL;
    fprintf(stderr, "ggprof: %s: %s\n", ggprof_cmd_name, safe ? ggprof_text_safe(msg, safe, len) : "(out of memory)");
    free(safe);
    free(msg);
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

/* One of the window options into w: 0 when parsed, else the exit code. */
static int bad_window(const char *arg, const char *v, const char *expected) {
    return ggprof_fail(GGPROF_EXIT_USAGE, "%s '%s': expected %s", arg, v, expected);
}

static int window_opt(void *dest, const char *arg, const char *v) {
    ggprof_window_opts *w = dest;
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
    } else {
        long n = strtol(v, &end, 10);
        if (end == v || *end || n <= 0) return bad_window(arg, v, "a capture window's number (1, 2, ...)");
        w->window = n;
    }
    w->set = 1;
    return 0;
}

/* The window options, taken by the commands whose ggprof_args has a window: their dest is that window. */
static const ggprof_opt k_window_opts[] = {
    { "--from", NULL, GGPROF_OPT_CALL, NULL, window_opt, "S",
      "the graphs that start S seconds after the trace's first record or later, and the records of no graph "
      "that start then" },
    { "--to", NULL, GGPROF_OPT_CALL, NULL, window_opt, "S",
      "the graphs that start earlier than S seconds after the trace's first record, and the records of no graph "
      "that start then" },
    { "--graphs", NULL, GGPROF_OPT_CALL, NULL, window_opt, "A-B", "the graphs of ids A to B (A: that one graph)" },
    { "--process", NULL, GGPROF_OPT_CALL, NULL, window_opt, "PID", "the records, graphs and tables of process PID only" },
    { "--window", NULL, GGPROF_OPT_CALL, NULL, window_opt, "N",
      "record's capture window N (--delay, --duration, SIGUSR1; the windows table), as --from/--to of its start "
      "and end" },
};
#define N_WINDOW_OPTS ((int) (sizeof(k_window_opts) / sizeof(k_window_opts[0])))
static const char k_window_title[] =
    "WINDOW: what the command reads of TRACE (the views and tables stay the same, with fewer rows):\n";

static const ggprof_opt *find_in(const ggprof_opt *opts, int n, const char *arg) {
    for (int k = 0; k < n; k++) {
        const ggprof_opt *o = &opts[k];
        if (strcmp(arg, o->name) == 0 || (o->alias && strcmp(arg, o->alias) == 0)) return o;
    }
    return NULL;
}

static int set_value(const ggprof_opt *o, void *dest, const char *arg, const char *v) {
    char *end = NULL;
    switch (o->kind) {
    case GGPROF_OPT_STRING: *(const char **) dest = v; return 0;
    case GGPROF_OPT_COUNT: {
        long n = strtol(v, &end, 10);
        if (end == v || *end || n < 0) return ggprof_fail(GGPROF_EXIT_USAGE, "%s '%s': expected a count >= 0", arg, v);
        *(long *) dest = n;
        return 0;
    }
    case GGPROF_OPT_PERCENT: {
        double d = strtod(v, &end);
        if (end == v || *end || !(d >= 0)) return ggprof_fail(GGPROF_EXIT_USAGE, "%s '%s': expected a percentage >= 0", arg, v);
        *(double *) dest = d;
        return 0;
    }
    case GGPROF_OPT_CALL: return o->call(dest, arg, v);
    }
    return ggprof_fail(GGPROF_EXIT_INTERNAL, "internal: option %s has no kind", arg);
}

/* Help mode (ggprof_help): the command being asked, and whether its parser printed the help. */
static struct {
    const ggprof_cmd *cmd;
    int               options_only, done;
} help;

enum { HELP_WIDTH = 112, HELP_COL_MAX = 26 };

/* Writes the words of text from column *col on, wrapping at HELP_WIDTH to column indent. */
static void put_wrapped(FILE *f, const char *text, int indent, int *col) {
    while (*text) {
        while (*text == ' ') text++;
        size_t w = strcspn(text, " ");
        if (!w) break;
        if (*col > indent && *col + 1 + (int) w > HELP_WIDTH) {
            fprintf(f, "\n%*s", indent, "");
            *col = indent;
        } else if (*col > indent) {
            fputc(' ', f);
            (*col)++;
        }
        fwrite(text, 1, w, f);
        *col += (int) w;
        text += w;
    }
}

/* "-o, --output OUT.db", or the synopsis's "-o OUT.db" (short: the alias alone). */
static void opt_label(const ggprof_opt *o, int short_form, char *buf, size_t n) {
    if (short_form) snprintf(buf, n, "%s%s%s", o->alias ? o->alias : o->name, o->arg ? " " : "", o->arg ? o->arg : "");
    else snprintf(buf, n, "%s%s%s%s%s", o->alias ? o->alias : "", o->alias ? ", " : "", o->name, o->arg ? " " : "",
                  o->arg ? o->arg : "");
}

static void print_synopsis(FILE *f, const ggprof_args *a, int col) {
    int indent = col;
    char item[160], label[150];
    for (int k = 0; k < a->n_opts; k++) {
        opt_label(&a->opts[k], 1, label, sizeof(label));
        snprintf(item, sizeof(item), "[%s]", label);
        put_wrapped(f, item, indent, &col);
    }
    if (a->window) put_wrapped(f, "[WINDOW]", indent, &col);
}

static void print_block(FILE *f, const ggprof_opt *opts, int n, int help_col) {
    char label[150];
    for (int k = 0; k < n; k++) {
        opt_label(&opts[k], 0, label, sizeof(label));
        int col = fprintf(f, "  %s", label);
        if (col + 2 > help_col) {
            fprintf(f, "\n%*s", help_col, "");
        } else {
            fprintf(f, "%*s", help_col - col, "");
        }
        col = help_col;
        put_wrapped(f, opts[k].help, help_col, &col);
        fputc('\n', f);
    }
}

static int help_col_of(const ggprof_opt *opts, int n, int col) {
    char label[150];
    for (int k = 0; k < n; k++) {
        opt_label(&opts[k], 0, label, sizeof(label));
        int w = 2 + (int) strlen(label) + 2;
        if (w > col && w <= HELP_COL_MAX) col = w;
    }
    return col;
}

static void print_names(FILE *f, const ggprof_opt *opts, int n, const char *group) {
    for (int k = 0; k < n; k++) {
        fprintf(f, "%s %s %s %s\n", opts[k].name, opts[k].alias ? opts[k].alias : "-",
                opts[k].kind == GGPROF_OPT_FLAG ? "flag" : "value", group);
    }
}

/* The help of help.cmd, from a: its prose with the synopsis and the options' lines in place. */
static void print_help(FILE *f, const ggprof_args *a) {
    if (help.options_only) {
        print_names(f, a->opts, a->n_opts, "command");
        if (a->window) print_names(f, k_window_opts, N_WINDOW_OPTS, "window");
        return;
    }
    int help_col = help_col_of(a->opts, a->n_opts, 0);
    if (a->window) help_col = help_col_of(k_window_opts, N_WINDOW_OPTS, help_col);
    int col = 0, block = 0;
    for (const char *p = help.cmd->usage; *p; p++) {
        if (*p == GGPROF_HELP_SYNOPSIS[0]) {
            print_synopsis(f, a, col);
        } else if (*p == GGPROF_HELP_OPTIONS[0]) {
            print_block(f, a->opts, a->n_opts, help_col);
            block = 1;
        } else {
            fputc(*p, f);
            col = *p == '\n' ? 0 : col + 1;
        }
    }
    if (!block) print_block(f, a->opts, a->n_opts, help_col);
    if (a->window) {
        fputs(k_window_title, f);
        print_block(f, k_window_opts, N_WINDOW_OPTS, help_col);
    }
}

int ggprof_help(const ggprof_cmd *c, int options_only) {
    char *argv[] = { (char *) c->name, NULL };
    help.cmd          = c;
    help.options_only = options_only;
    help.done         = 0;
    c->fn(1, argv);
    help.cmd = NULL;
    if (!help.done) return ggprof_fail(GGPROF_EXIT_INTERNAL, "internal: %s parses with no option table", c->name);
    return ggprof_close_output(stdout, "stdout") == 0 ? GGPROF_EXIT_OK : GGPROF_EXIT_INTERNAL;
}

int ggprof_parse_args(int argc, char **argv, ggprof_args *a) {
    a->n_pos = 0;
    if (help.cmd) { /* asked for help: print it, and stop the command before it does anything */
        print_help(stdout, a);
        help.done = 1;
        return GGPROF_EXIT_USAGE;
    }
    int i = 1, rc;
    for (; i < argc; i++) {
        const char *arg = argv[i];
        if (strcmp(arg, "--") == 0) {
            i++;
            break;
        }
        const ggprof_opt *o = NULL;
        void *dest          = NULL;
        if (arg[0] == '-' && arg[1]) {
            if ((o = find_in(a->opts, a->n_opts, arg)) != NULL) dest = o->dest;
            else if (a->window && (o = find_in(k_window_opts, N_WINDOW_OPTS, arg)) != NULL) dest = a->window;
        }
        if (o && o->kind == GGPROF_OPT_FLAG) {
            *(int *) dest = 1;
        } else if (o) {
            if (i + 1 >= argc) {
                return ggprof_fail(GGPROF_EXIT_USAGE, "%s needs a value; see 'ggprof %s --help'", arg, ggprof_cmd_name);
            }
            if ((rc = set_value(o, dest, arg, argv[++i])) != 0) return rc;
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
