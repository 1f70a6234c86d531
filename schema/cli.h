/* What every ggprof subcommand shares: the command table entry, error reporting and exit codes. */
#ifndef GGPROF_CLI_H
#define GGPROF_CLI_H

#include <stdio.h>

/* A user's mistake exits 2 with one line naming the bad value; an internal failure exits 1 and says where. */
#define GGPROF_EXIT_OK       0
#define GGPROF_EXIT_INTERNAL 1
#define GGPROF_EXIT_USAGE    2

typedef struct {
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *summary;
    const char *usage; /* printed by `ggprof CMD --help` and `ggprof help CMD` */
} ggprof_cmd;

extern const char *ggprof_cmd_name; /* the subcommand being run, for messages */

void ggprof_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Prints "ggprof: CMD: message" and returns code, so that a command can `return ggprof_fail(2, ...)`. */
int ggprof_fail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* True when argv[i] asks for help; commands print their usage then. */
int ggprof_is_help(const char *arg);
/* Closes an output stream, reporting a write error that would otherwise be lost. Returns 0 or -1. */
int ggprof_close_output(FILE *f, const char *path);

/* The one option parser of every command. Options may come anywhere among the positionals, until "--". */
enum ggprof_opt_kind {
    GGPROF_OPT_FLAG,    /* no value: *(int *) dest = 1 */
    GGPROF_OPT_STRING,  /* *(const char **) dest = value */
    GGPROF_OPT_COUNT,   /* *(long *) dest = an integer >= 0 */
    GGPROF_OPT_PERCENT, /* *(double *) dest = a number >= 0 */
    GGPROF_OPT_CALL,    /* call(dest, option, value): 0, or the exit code after its own one-line error */
};
typedef struct {
    const char *name, *alias; /* "--output" and "-o" (alias may be NULL) */
    int         kind;         /* enum ggprof_opt_kind */
    void       *dest;
    int (*call)(void *dest, const char *option, const char *value);
} ggprof_opt;

typedef struct {
    const ggprof_opt *opts;
    int               n_opts;
    const char      **pos;      /* the positionals, in order */
    int               max_pos, n_pos;
    const char       *too_many; /* the error for one positional more, with a %s for it */
    int               stop_at_positional; /* the first positional ends the options (record: the command) */
    int               next;     /* out: argv index of the first argument not parsed (argc when all were) */
    struct ggprof_window_opts *window; /* when set, the window options below are accepted into it */
} ggprof_args;

/* The window of a trace every analysis command and export takes, parsed here for all of them (what it keeps:
 * analyzer/trace.c, docs/analysis.md "Windows"). */
typedef struct ggprof_window_opts {
    int       set;                /* any of them was given */
    int       has_from, has_to;   /* seconds from the trace's first record */
    double    from_s, to_s;
    int       has_graphs, has_pid;
    long long graph_lo, graph_hi; /* --graphs A-B, inclusive */
    long long pid;
    long      window;             /* --window N: record's capture window N (1, 2, ...); 0: none */
} ggprof_window_opts;

/* The window options' help, for the usage text of each command that takes them. */
#define GGPROF_WINDOW_USAGE                                                                                    \
    "Window (what the command reads of TRACE; the views and tables stay the same, with fewer rows):\n"          \
    "  --from S, --to S  the graphs that start S seconds after the trace's first record or later (--from),\n"   \
    "                    or earlier (--to), and the records of no graph that start then\n"                      \
    "  --graphs A-B      the graphs of ids A to B (A: that one graph)\n"                                         \
    "  --process PID     the records, graphs and tables of process PID only\n"                                   \
    "  --window N        record's capture window N (--delay, --duration, SIGUSR1; the windows table), as\n"      \
    "                    --from/--to of its start and end\n"


/* Parses argv[1..] against a->opts. Returns 0, or GGPROF_EXIT_USAGE after printing one line that names the bad
 * argument and what would be accepted. */
int ggprof_parse_args(int argc, char **argv, ggprof_args *a);

#endif
