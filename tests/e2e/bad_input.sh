# Bad input gets one line on stderr naming it, and exit status 2.
. "$(dirname "$0")/../lib.sh"

expect_error() { # NAME WHAT-THE-LINE-MUST-NAME CMD...
    local name=$1 needle=$2
    shift 2
    "$@" > "$OUT/stdout" 2> "$OUT/stderr"
    local rc=$?
    expect "$name: exit status 2" "$rc" 2
    expect "$name: one line on stderr" "$(wc -l < "$OUT/stderr")" 1
    expect "$name: the line names '$needle'" "$(grep -c -F -- "$needle" "$OUT/stderr")" 1
}

printf 'hello, not a trace\n' > "$OUT/notatrace.txt"
printf 'SQLite format 3\0' > "$OUT/fake.db"
sqlite_db="$OUT/other.db"
rm -f "$sqlite_db"
"$GGPROF" record -o "$OUT/good.db" -- /bin/true 2> /dev/null
gzip -dc "$GGPROF_TEST_OUT/llama_cpu/dense.json.gz" 2> /dev/null | head -c 20000 | gzip > "$OUT/truncated.json.gz"
cp "$OUT/good.db" "$sqlite_db" && "$GGPROF" query "$sqlite_db" "SELECT 1" > /dev/null
expect_error "missing trace" "nosuch.db" "$GGPROF" report "$OUT/nosuch.db"
expect_error "not a trace" "notatrace.txt" "$GGPROF" report "$OUT/notatrace.txt"
expect_error "truncated json.gz" "truncated.json.gz" "$GGPROF" report "$OUT/truncated.json.gz"
expect_error "broken database" "fake.db" "$GGPROF" report "$OUT/fake.db"
expect_error "unwritable -o" "/nonexistent-dir/x.db" "$GGPROF" record -o /nonexistent-dir/x.db -- /bin/true
# A record that fails once its ring exists leaves no ring behind (record_cleanup undoes every phase).
shm_before=$(ls /dev/shm 2> /dev/null | grep -c '^ggprof-')
expect_error "command that does not exist" "no-such-command-ggprof" "$GGPROF" record -o "$OUT/x.db" -- no-such-command-ggprof
expect "... and leaves no ring in /dev/shm" "$(ls /dev/shm 2> /dev/null | grep -c '^ggprof-')" "$shm_before"
expect_error "bad --level" "fast" "$GGPROF" record --level fast -- /bin/true
expect_error "bad SQL" "no such table" "$GGPROF" query "$OUT/good.db" "SELECT * FROM nosuchtable"
expect_error "unknown command" "frobnicate" "$GGPROF" frobnicate
# The window options (one parser for every analysis command) name the bad value; a window the trace lacks too.
expect_error "bad --from" "--from 'soon'" "$GGPROF" report "$OUT/good.db" --from soon
expect_error "negative --to" "--to '-1'" "$GGPROF" rollup "$OUT/good.db" --by layer --to -1
expect_error "bad --graphs" "--graphs '9-3'" "$GGPROF" top-ops "$OUT/good.db" --graphs 9-3
expect_error "bad --process" "--process 'me'" "$GGPROF" diff "$OUT/good.db" "$OUT/good.db" --process me
expect_error "--window the trace lacks" "--window 7" "$GGPROF" export "$OUT/good.db" --chrome "$OUT/w.json" --window 7
expect "a failed start leaves no trace behind" "$(ls "$OUT/x.db" 2> /dev/null | wc -l)" 0
