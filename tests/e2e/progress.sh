# Progress of long work on stderr: shown on a terminal (here a pseudo-terminal made by script(1)), never when
# stderr is a file or a pipe, never with record -q. GGPROF_PROGRESS_AFTER_MS=0 shows it for short work too.
. "$(dirname "$0")/../lib.sh"
S="$GGPROF_ROOT/samples/traces"
export GGPROF_PROGRESS_AFTER_MS=0
on_tty() { # OUT CMD: runs CMD (a shell line) with a terminal as stdout and stderr; the terminal's text to OUT
    script -qec "$2" /dev/null > "$1" 2>&1
}

on_tty "$OUT/report.tty" "'$GGPROF' report '$S/upstream-v3.json' > /dev/null"
expect "report on a terminal: reading the JSON, as a percentage" "$(grep -c "ggprof: reading '.*upstream-v3.json' *[0-9]*%" "$OUT/report.tty")" 1
expect "... and the line is cleared at the end" "$(grep -c $'\r\033\\[K' "$OUT/report.tty")" 1
"$GGPROF" report "$S/upstream-v3.json" > /dev/null 2> "$OUT/report.err"
expect "report with stderr in a file: no progress" "$(grep -c 'ggprof: reading' "$OUT/report.err")" 0

on_tty "$OUT/export.tty" "'$GGPROF' export '$S/upstream-v3-pretty.json.gz' --json '$OUT/copy.json'"
expect "export on a terminal: reading, then writing" "$(grep -c "ggprof: reading" "$OUT/export.tty"):$(grep -c \
    "ggprof: writing '.*copy.json'" "$OUT/export.tty")" "1:1"
expect "... and what it wrote is whole" "$(q "$OUT/copy.json" "SELECT count(*) FROM events")" 173

build_ggml_program exits
on_tty "$OUT/record.tty" "'$GGPROF' record -o '$OUT/r.db' -- '$OUT/exits' return"
expect "record on a terminal: building the database, writing the JSON" "$(grep -c 'ggprof: building the trace database' \
    "$OUT/record.tty"):$(grep -c "ggprof: writing '.*r.json.gz'" "$OUT/record.tty")" "1:1"
on_tty "$OUT/quiet.tty" "'$GGPROF' record -q -o '$OUT/q.db' -- '$OUT/exits' return"
expect "record -q on a terminal: no progress" "$(grep -c 'ggprof:' "$OUT/quiet.tty")" 0
expect "... and the trace is whole" "$(q "$OUT/q.db" "SELECT count(*) FROM graphs")" 12

on_tty "$OUT/diff.tty" "'$GGPROF' diff '$S/diff-a.json.gz' '$S/diff-b.json.gz' > /dev/null"
expect "diff on a terminal: reading each trace's records, as a percentage" \
    "$(tr '\r' '\n' < "$OUT/diff.tty" | grep -a "ggprof: diff: reading '.*diff-[ab].json.gz' *[0-9]*%" | sed 's/.*diff-\(.\).*/\1/' | sort -u | paste -sd,)" "a,b"
"$GGPROF" diff "$S/diff-a.json.gz" "$S/diff-b.json.gz" > /dev/null 2> "$OUT/diff.err"
expect "diff with stderr in a file: no progress" "$(grep -c 'ggprof: diff: reading' "$OUT/diff.err")" 0
on_tty "$OUT/rollup.tty" "'$GGPROF' rollup '$S/rollup-dense.json.gz' --by layer > /dev/null"
expect "rollup on a terminal: reading the records, as a percentage" \
    "$(tr '\r' '\n' < "$OUT/rollup.tty" | grep -ac "ggprof: rollup: reading *[0-9]*%")" 1
