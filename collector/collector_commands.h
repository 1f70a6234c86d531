/* The collector's commands, for the command table (ggprof.c): each lives in its cmd_<name>.c with its usage prose and
 * its option table (the help is printed from both). */
#ifndef GGPROF_COLLECTOR_COMMANDS_H
#define GGPROF_COLLECTOR_COMMANDS_H

int ggprof_cmd_record(int argc, char **argv);
int ggprof_cmd_collect(int argc, char **argv);
int ggprof_cmd_merge(int argc, char **argv);
int ggprof_cmd_top(int argc, char **argv);

extern const char ggprof_usage_record[];
extern const char ggprof_usage_collect[];
extern const char ggprof_usage_merge[];
extern const char ggprof_usage_top[];

#endif
