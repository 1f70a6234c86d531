/* Findings: what a trace says to try, each from one rule, ranked by the time at stake (docs/findings.md). What
 * `report` opens with (and writes as CSV and JSON), what `diff` compares and the HTML page's panel shows. */
#ifndef GGPROF_FINDINGS_H
#define GGPROF_FINDINGS_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "accounting.h"
#include "roofline.h"

#define GGPROF_FINDING_MAX_EV 8

typedef struct {
    char key[24];
    char val[128];
    int  numeric; /* val is a number (JSON writes it bare) */
} ggprof_evidence;

/* The one change of the recorded command that a finding's advice amounts to, as llama.cpp's options (what `ggprof
 * try` applies and measures): n options, each set to its value (the long or short spelling of the same option in
 * the command is replaced). n 0: the advice is no single change of options (free cores, a newer ggml). */
#define GGPROF_CHANGE_MAX 2
typedef struct {
    int n;
    struct {
        char flag[16];  /* llama.cpp's short spelling: "-t", "-ub", "-b", "-ngl" */
        char value[32]; /* "2", "512" */
    } opt[GGPROF_CHANGE_MAX];
} ggprof_change;

typedef struct {
    const char     *rule;        /* the rule's name: "thread_imbalance" */
    int64_t         at_stake_ns; /* the rule's estimate of the time a fix would save (0: memory, not time) */
    int32_t         pid;
    ggprof_evidence ev[GGPROF_FINDING_MAX_EV];
    int             n_ev;
    char            advice[320];
    ggprof_change   change; /* what the advice changes in the command (try); n 0 when it is no one change */
} ggprof_finding;

/* What every rule reads: the trace, its accounting (accounting.h) and the roofs given (below_roof). */
typedef struct {
    sqlite3                 *db;
    const ggprof_accounting *acc;
    const ggprof_roofs      *roofs; /* may be NULL or empty: below_roof stays silent */
    int64_t                  wall_ns, graphs_ns; /* summed over the processes */
} ggprof_findings_ctx;

/* A rule: one function, returning 1 with *out filled (0: silent, -1: an error). */
typedef int (*ggprof_rule_fn)(const ggprof_findings_ctx *ctx, ggprof_finding *out);
typedef struct {
    const char    *name;
    ggprof_rule_fn fn;
    const char    *threshold; /* when it fires and what it counts as at stake (docs/findings.md says more) */
} ggprof_rule;

extern const ggprof_rule ggprof_rules[];
extern const size_t      ggprof_n_rules;

typedef struct {
    ggprof_finding *v;
    size_t          n;
} ggprof_findings;

/* Runs every rule on db, ranked by time at stake (most first; ties by rule name). acc: the trace's accounting
 * (computed here when NULL). Returns 0, or -1 with a one-line reason. */
int  ggprof_findings_run(sqlite3 *db, const ggprof_accounting *acc, const ggprof_roofs *roofs, ggprof_findings *f,
                         char *why, size_t why_len);
void ggprof_findings_free(ggprof_findings *f);
/* The value of evidence key (NULL when the finding has none). */
const char *ggprof_finding_ev(const ggprof_finding *f, const char *key);
/* The "Findings" section of the text report: at most max findings, or one line saying none fired. */
void ggprof_findings_print(FILE *out, const ggprof_findings *f, size_t max);
/* The findings as a JSON array of {"rule","at_stake_ns","pid","evidence":{...},"advice"}, indented by indent;
 * json_flags: ggprof_json_put's (GGPROF_JSON_HTML inside an HTML page). What report --format json and the HTML
 * page write. */
void ggprof_findings_json(FILE *out, const ggprof_findings *f, const char *indent, unsigned json_flags);

#endif
