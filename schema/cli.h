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
    const char *usage; /* the prose of `ggprof CMD --help` and `ggprof help CMD`, with the markers below */
} ggprof_cmd;

/* A command's usage prose holds no option line: `ggprof CMD --help` prints it with GGPROF_HELP_SYNOPSIS replaced by
 * "[-o OUT.db] [--level graph|split|op] ..." and GGPROF_HELP_OPTIONS by a line per option, both generated from the
 * option table the command parses with (at the end when the prose has no GGPROF_HELP_OPTIONS), then the window
 * options' block when it takes them: help cannot leave out an option the parser accepts. */
#define GGPROF_HELP_SYNOPSIS "\001"
#define GGPROF_HELP_OPTIONS  "\002"

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
    const char *arg;          /* the value's name in help ("OUT.db", "N", "graph|split|op"); NULL for a flag */
    const char *help;         /* what it does, for --help (wrapped there) */
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

/* Parses argv[1..] against a->opts. Returns 0, or GGPROF_EXIT_USAGE after printing one line that names the bad
 * argument and what would be accepted. */
int ggprof_parse_args(int argc, char **argv, ggprof_args *a);

/* `ggprof CMD --help` and `ggprof help CMD`: runs c->fn in help mode, where its ggprof_parse_args prints the
 * command's help from the table it was given (options_only: the options' names, one a line, as
 * "NAME ALIAS|- value|flag command|window", for tests/e2e/help_options.sh) instead of parsing. Returns the exit
 * code. */
int ggprof_help(const ggprof_cmd *c, int options_only);

#endif
