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
} ggprof_args;

/* Parses argv[1..] against a->opts. Returns 0, or GGPROF_EXIT_USAGE after printing one line that names the bad
 * argument and what would be accepted. */
int ggprof_parse_args(int argc, char **argv, ggprof_args *a);

#endif
