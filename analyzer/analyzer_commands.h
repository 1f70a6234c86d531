/* The analyzer's commands, for the command table (collector/ggprof.c) and the fuzz targets: each lives in its
 * cmd_<name>.c with its usage prose and its option table (the help is printed from both). */
#ifndef GGPROF_ANALYZER_COMMANDS_H
#define GGPROF_ANALYZER_COMMANDS_H

int ggprof_cmd_report(int argc, char **argv);
int ggprof_cmd_query(int argc, char **argv);
int ggprof_cmd_export(int argc, char **argv);
int ggprof_cmd_top_ops(int argc, char **argv);
int ggprof_cmd_memory(int argc, char **argv);
int ggprof_cmd_top_kernels(int argc, char **argv);
int ggprof_cmd_inefficiency(int argc, char **argv);
int ggprof_cmd_calibrate(int argc, char **argv);
int ggprof_cmd_rollup(int argc, char **argv);
int ggprof_cmd_diff(int argc, char **argv);
int ggprof_cmd_replay(int argc, char **argv);
int ggprof_cmd_try(int argc, char **argv);

extern const char ggprof_usage_report[];
extern const char ggprof_usage_query[];
extern const char ggprof_usage_export[];
extern const char ggprof_usage_top_ops[];
extern const char ggprof_usage_memory[];
extern const char ggprof_usage_top_kernels[];
extern const char ggprof_usage_inefficiency[];
extern const char ggprof_usage_calibrate[];
extern const char ggprof_usage_rollup[];
extern const char ggprof_usage_diff[];
extern const char ggprof_usage_replay[];
extern const char ggprof_usage_try[];

#endif
