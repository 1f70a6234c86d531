# Faults around a recording: the disk fills, the collector dies. The workload never notices; what was recorded
# before stays readable, and record says what happened in one line.
. "$(dirname "$0")/../lib.sh"

# The disk fills: the output on a 1 MiB tmpfs, a generation that records far more than that.
disk="$OUT/small"
mkdir -p "$disk"
if mountpoint -q "$disk" || mount -t tmpfs -o size=1m tmpfs "$disk" 2> "$OUT/mount.err"; then
    rm -f "$disk"/*
    "$GGPROF" record -o "$disk/t.db" -- "$LLAMA_BIN_DIR/llama-completion" -m "$GGUF_DENSE" -p "Hello" -n 300 -t 2 \
        -no-cnv > "$OUT/full.out" 2> "$OUT/full.err"
    expect "disk full: record exits with the workload's status" "$?" 0
    expect "disk full: the workload generated to the end" "$(grep -ac 'common_perf_print: *eval time' "$OUT/full.err")" 1
    expect "disk full: record says so, in one line" "$(grep -c '^ggprof: ' "$OUT/full.err"):$(grep -c 'filled up' \
        "$OUT/full.err")" "1:1"
    expect "disk full: the trace opens" "$("$GGPROF" report "$disk/t.db" > "$OUT/full.report" 2>&1; echo $?)" 0
    graphs=$(q "$disk/t.db" "SELECT count(*) FROM graphs")
    expect_ge "disk full: the graphs recorded before it are in the trace" "$graphs" 20
    expect_ge "... but not all 300 tokens' (the rest is lost)" 299 "$graphs"
    check_cpu_trace "$disk/t.db" "disk full"
    expect "disk full: the trace's notes say it too" "$(q "$disk/t.db" "SELECT count(*) FROM notes
        WHERE text LIKE '%filled up%graphs recorded before it%'")" 1
    umount "$disk"
else
    not_ok "disk full: a tmpfs for the test" "$(head -c 200 "$OUT/mount.err")"
fi

# The collector dies mid-run: the workload (a shell that runs llama-completion, then writes its status) goes on
# and exits normally; the engine never waits for a collector.
status="$OUT/status"
rm -f "$status"
"$GGPROF" record -o "$OUT/killed.db" -- sh -c "'$LLAMA_BIN_DIR/llama-completion' -m '$GGUF_DENSE' -p Hello -n 800 -t 2 \
    -no-cnv > '$OUT/killed.out' 2>&1; echo \$? > '$status'" > /dev/null 2>&1 &
collector=$!
sleep 1
expect "collector killed: it was still recording" "$(kill -9 "$collector" 2>&1; echo $?)" 0
wait "$collector" 2> /dev/null
for _ in $(seq 1 120); do [ -s "$status" ] && break; sleep 1; done
expect "collector killed: the workload still ends normally" "$(cat "$status" 2> /dev/null)" 0
expect "collector killed: and generated to the end" "$(grep -ac 'common_perf_print: *eval time' "$OUT/killed.out")" 1
shm=/dev/shm
[ -w /dev/shm ] || shm=${TMPDIR:-/tmp}
left() { find "$shm" -maxdepth 1 -name "ggprof-record-$collector-*.ring" | wc -l; }
expect "collector killed: its ring is left behind" "$(left)" 1

# Two records at once: with different outputs both complete; with the same output the second stops at once, with
# one line, and leaves the first's trace whole.
run_model() { echo "'$LLAMA_BIN_DIR/llama-completion' -m '$GGUF_DENSE' -p Hello -n 24 -t 1 -no-cnv"; }
"$GGPROF" record -q -o "$OUT/a.db" -- sh -c "$(run_model) > /dev/null 2>&1" &
first=$!
"$GGPROF" record -q -o "$OUT/b.db" -- sh -c "$(run_model) > /dev/null 2>&1"
expect "two at once, different outputs: the second completes" "$?" 0
wait "$first"
expect "... and so does the first" "$?" 0
expect "the next record removes the killed collector's ring (its maker is gone)" "$(left)" 0
expect "... each trace with its own graphs" "$(q "$OUT/a.db" "SELECT count(*) > 0 FROM graphs"):$(q "$OUT/b.db" \
    "SELECT count(*) > 0 FROM graphs")" "1:1"
"$GGPROF" record -q -o "$OUT/same.db" -- sh -c "$(run_model) > /dev/null 2>&1; sleep 3" &
first=$!
sleep 1
"$GGPROF" record -o "$OUT/same.db" -- true > /dev/null 2> "$OUT/same.err"
expect "two at once, same output: the second stops with one line naming it" "$?:$(wc -l < "$OUT/same.err"):$(grep -c \
    "another 'ggprof record' is writing '$OUT/same.db'" "$OUT/same.err")" "2:1:1"
wait "$first"
expect "... and the first's trace is whole" "$?:$(q "$OUT/same.db" "SELECT count(*) FROM graphs")" "0:25"

# However the workload ends, every graph it computed is in the trace: the records are in shared memory before
# the program can end, and the collector reads them after it did.
build_ggml_program exits
for how in return _exit signal; do
    "$GGPROF" record -q -o "$OUT/exit-$how.db" -- "$OUT/exits" "$how" > /dev/null 2>&1
    rc=$?
    want=0
    [ "$how" = _exit ] && want=3
    [ "$how" = signal ] && want=4
    expect "ends by $how: record passes its status on" "$rc" "$want"
    expect "ends by $how: all 12 graphs in the trace, every split timed" "$(q "$OUT/exit-$how.db" "SELECT count(*) ||
        ':' || sum(ticks_matched) FROM splits")" "12:12"
done
