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

#define GGPROF_FINDING_MAX_EV 12

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
/* The change as a JSON object, {"-t": "2", "-ub": "31"} ({} for none): report's findings and try's trials alike. */
void ggprof_change_json(FILE *out, const ggprof_change *ch, unsigned json_flags);

typedef struct {
    const char     *rule;        /* the rule's name: "thread_imbalance" */
    int64_t         at_stake_ns; /* the rule's estimate of the time a fix would save (0: memory, not time) */
    int32_t         pid;
    ggprof_evidence ev[GGPROF_FINDING_MAX_EV];
    int             n_ev;
    char            advice[320];
    ggprof_change   change; /* what the advice changes in the command (try); n 0 when it is no one change */
} ggprof_finding;

/* A rule's numeric threshold, as data: the rule reads it from its table entry, `report --list-rules` and its
 * threshold text print it, and docs/findings.md's table of thresholds is checked against that listing. */
typedef struct {
    const char *name;  /* "share": what the rule asks for it by */
    double      value; /* 0.05 */
    const char *unit;  /* "fraction" (printed as a %), "tokens", "bytes", "percent", "graphs" */
    const char *what;  /* what it is a threshold of, one line */
} ggprof_rule_param;
#define GGPROF_RULE_MAX_PARAMS 4

/* What running one rule found besides its finding: a table or column the trace lacks (the rule stayed silent:
 * report --verbose says which) or a broken query (the run fails with it). */
typedef struct {
    char absent[192]; /* the first "no such table: X" (or an input not given: "no --roof"); empty: none */
    char error[320];  /* SQLite's message of a query that failed; empty: none */
} ggprof_rule_state;

struct ggprof_rule;
/* What every rule reads: the trace, its accounting (accounting.h) and the roofs given (below_roof). */
typedef struct {
    sqlite3                 *db;
    const ggprof_accounting *acc;
    const ggprof_roofs      *roofs; /* may be NULL or empty: below_roof stays silent */
    int64_t                  wall_ns, graphs_ns; /* summed over the processes */
    const struct ggprof_rule *rule;  /* the rule being run: its thresholds */
    ggprof_rule_state        *state; /* what running it found (set by ggprof_findings_run) */
} ggprof_findings_ctx;

/* A rule: one function, returning 1 with *out filled (0: silent, -1: an error). */
typedef int (*ggprof_rule_fn)(const ggprof_findings_ctx *ctx, ggprof_finding *out);
typedef struct ggprof_rule {
    const char       *name;
    ggprof_rule_fn    fn;
    const char       *threshold; /* when it fires and what is at stake; "{NAME}" is its parameter NAME's value */
    ggprof_rule_param params[GGPROF_RULE_MAX_PARAMS]; /* its thresholds (name NULL ends them) */
} ggprof_rule;

extern const ggprof_rule ggprof_rules[];
extern const size_t      ggprof_n_rules;

/* A rule that stayed silent because the trace lacks what it reads (an older trace, a JSON profile). */
typedef struct {
    const char *rule;
    char        why[192];
} ggprof_rule_silence;

typedef struct {
    ggprof_finding      *v;
    size_t               n;
    ggprof_rule_silence *silent; /* report --verbose prints them */
    size_t               n_silent;
} ggprof_findings;

/* Runs every rule on db, ranked by time at stake (most first; ties by rule name). acc: the trace's accounting
 * (computed here when NULL). A rule whose query fails (anything but a table or column the trace lacks) or that
 * returns -1 fails the run. Returns 0, or -1 with a one-line reason naming the rule. */
int  ggprof_findings_run(sqlite3 *db, const ggprof_accounting *acc, const ggprof_roofs *roofs, ggprof_findings *f,
                         char *why, size_t why_len);
void ggprof_findings_free(ggprof_findings *f);
/* The value of evidence key (NULL when the finding has none). */
const char *ggprof_finding_ev(const ggprof_finding *f, const char *key);
/* The "Findings" section of the text report: at most max findings, or one line saying none fired. */
void ggprof_findings_print(FILE *out, const ggprof_findings *f, size_t max);
/* The findings as a JSON array of {"rule","at_stake_ns","pid","evidence":{...},"advice","change":{FLAG: VALUE}}
 * ("change": {} when the advice is no single change of options), indented by indent;
 * json_flags: ggprof_json_put's (GGPROF_JSON_HTML inside an HTML page). What report --format json and the HTML
 * page write. */
void ggprof_findings_json(FILE *out, const ggprof_findings *f, const char *indent, unsigned json_flags);

/* A rule's threshold text with its parameters' values put in ("one op's barrier waits >= 5% of ..."). */
void ggprof_rule_threshold_text(const ggprof_rule *r, char *buf, size_t len);
/* A parameter's value as its unit says it: "5%", "128 tokens", "1 MiB". */
void ggprof_rule_param_text(const ggprof_rule_param *p, char *buf, size_t len);
/* `report --list-rules`: every rule, its thresholds and their text; json: {"rules": [{"rule", "threshold",
 * "params": [{"name", "value", "unit", "what"}]}]}. */
void ggprof_rules_list(FILE *out, int json);

#endif
