#!/usr/bin/env bash
# The rules' fast tests (tests/rules/README.md), in the style of Perfetto's diff tests: each case is a small trace
# built here from nothing (mkdb's empty trace of the real schema, then base.sql and the case's .sql through the
# sqlite3 shell), `ggprof report --format json` run on it, and its findings (and, where the case asks, its
# accounting) compared with expected/CASE.json (diff -u). No llama.cpp, no fixture: the whole set runs in seconds.
# A case's header says what must hold besides: "-- fires: RULE..." (the rules that fire, or "none"), "-- args:"
# (report's options), "-- accounting" (compare the accounting too), "-- silent: RULE..." (the rules report --verbose
# says are silent for want of a table or an input, exactly).
# GGPROF_UPDATE_GOLDEN=1 rewrites expected/ from the current output (review the diff before committing).
# usage: tests/rules/run.sh [CASE...]
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
GGPROF=${GGPROF:-$ROOT/build/bin/ggprof}
MKDB=${GGPROF_RULES_MKDB:-$(dirname "$GGPROF")/../tests/rules/mkdb}
HERE=$ROOT/tests/rules
OUT=${GGPROF_TEST_OUT:-$ROOT/build/test-out}/rules
# The system's python3 when there is one: a version manager's shim takes a second to start, per call.
PY=$(command -v /usr/bin/python3 || command -v python3)
rm -rf "$OUT" && mkdir -p "$OUT"
pass=0 fail=0
ok() { echo "ok - rules/$1"; }
nok() { echo "not ok - rules/$1: $2"; }
[ -x "$MKDB" ] || { nok setup "no $MKDB (make unit builds it)"; exit 1; }
"$MKDB" "$OUT/empty.db" || { nok setup "mkdb failed"; exit 1; }

header() { sed -n "s/^-- $2:\{0,1\} *//p" "$1" | head -n 1; }
cases=("$@")
[ ${#cases[@]} -eq 0 ] && for f in "$HERE"/cases/*.sql; do cases+=("$(basename "$f" .sql)"); done
run_case() { # NAME: one case; prints its ok / not ok line
    local name=$1 sql db rc acc fires got want silent said exp args
    sql=$HERE/cases/$name.sql db=$OUT/$name.db
    [ -f "$sql" ] || { nok "$name" "no case $sql"; return; }
    cp "$OUT/empty.db" "$db"
    # one transaction, no journal: a case's trace is built in milliseconds, not a sync per row
    if ! { echo "PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; BEGIN;"; cat "$HERE/base.sql" "$sql"; echo "COMMIT;"; } |
        sqlite3 -bail "$db" > /dev/null 2> "$OUT/$name.sql.err"; then
        nok "$name" "building the trace: $(head -n 1 "$OUT/$name.sql.err")"
        return
    fi
    read -r -a args <<< "$(header "$sql" args)"
    "$GGPROF" report "$db" --format json --verbose ${args[@]+"${args[@]}"} > "$OUT/$name.report.json" 2> "$OUT/$name.stderr"
    rc=$?
    if [ $rc -ne 0 ]; then
        nok "$name" "report exited $rc: $(head -n 1 "$OUT/$name.stderr")"
        return
    fi
    grep -q '^-- accounting' "$sql" && acc=1 || acc=0
    # the findings (and the accounting) as expected/ keeps them; the rules that fired on the last line of fired
    if ! "$PY" - "$OUT/$name.report.json" "$acc" "$OUT/$name.fired" > "$OUT/$name.json" <<'PY'; then
import json, sys
d = json.load(open(sys.argv[1]))
out = {"findings": d["findings"]}
if sys.argv[2] == "1":
    out["accounting"] = [{k: p[k] for k in ("pid", "wall_ns", "categories")} for p in d["accounting"]]
print(json.dumps(out, indent=1, sort_keys=True))
open(sys.argv[3], "w").write(" ".join(sorted(f["rule"] for f in d["findings"])) or "none")
PY
        nok "$name" "report's JSON did not parse"
        return
    fi
    fires=$(header "$sql" fires)
    got=$(cat "$OUT/$name.fired")
    want=$(tr ' ' '\n' <<< "$fires" | grep . | sort | tr '\n' ' ' | sed 's/ $//')
    if [ -z "$fires" ]; then
        nok "$name" "the case has no '-- fires:' line"
        return
    elif [ "$got" != "$want" ]; then
        nok "$name" "fired: $got; the case says: $want"
        return
    fi
    # the rules silent for want of a table or an input, exactly: a typo in a column name reads as one
    silent=$(header "$sql" silent | tr ' ' '\n' | grep . | sort | tr '\n' ' ')
    said=$(sed -n 's/^ggprof: report: rule \([a-z_]*\) is silent: .*/\1/p' "$OUT/$name.stderr" | sort | tr '\n' ' ')
    if grep -q '^-- silent' "$sql" && [ "$said" != "$silent" ]; then
        nok "$name" "report --verbose says silent: ${said:-none}; the case says: ${silent:-none}"
        return
    fi
    exp=$HERE/expected/$name.json
    if [ -n "${GGPROF_UPDATE_GOLDEN:-}" ]; then
        cp "$OUT/$name.json" "$exp"
        ok "$name (expected rewritten)"
    elif [ ! -f "$exp" ]; then
        nok "$name" "no expected/$name.json (GGPROF_UPDATE_GOLDEN=1 writes it)"
    elif diff -u "$exp" "$OUT/$name.json" > "$OUT/$name.diff"; then
        ok "$name"
    else
        nok "$name" "findings differ from expected/$name.json:"
        sed 's/^/#   /' "$OUT/$name.diff" | head -n 40
    fi
}

# The cases in parallel (each its own files), their lines in the cases' order.
jobs=$(nproc 2> /dev/null || echo 2)
for name in "${cases[@]}"; do
    while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n; done
    run_case "$name" > "$OUT/$name.result" 2>&1 &
done
wait
for name in "${cases[@]}"; do
    cat "$OUT/$name.result"
    if grep -q '^not ok' "$OUT/$name.result"; then fail=$((fail + 1)); else pass=$((pass + 1)); fi
done

# docs/findings.md's table of thresholds against the rule table (report --list-rules --format json).
if [ $# -eq 0 ]; then
    "$GGPROF" report --list-rules --format json > "$OUT/rules.json" 2>&1 || echo "# report --list-rules failed"
    if why=$("$PY" "$HERE/check_doc.py" "$OUT/rules.json" "$ROOT/docs/findings.md" 2>&1); then
        ok docs-thresholds
        pass=$((pass + 1))
    else
        nok docs-thresholds "$why"
        fail=$((fail + 1))
    fi
fi
echo "# rules: $pass passed, $fail failed"
[ $fail -eq 0 ]
