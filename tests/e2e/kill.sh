# A workload killed with SIGKILL mid-generation leaves a trace that report reads, with every record that
# reached the ring, and record exits with 128+9.
. "$(dirname "$0")/../lib.sh"

db="$OUT/killed.db"
"$GGPROF" record -o "$db" -- "$LLAMA_BIN_DIR/llama-completion" -m "$GGUF_DENSE" -p "Once upon a time" -n 100000 \
    -t 2 --no-warmup -no-cnv --ignore-eos > "$OUT/killed.log" 2>&1 &
rec=$!
# Kill the workload once it has printed some 40 tokens' worth of text (their graphs are in the ring by then);
# waiting on output rather than on a clock keeps this right on a loaded machine.
pid=
for _ in $(seq 1 600); do
    [ -z "$pid" ] && pid=$(pgrep -P "$rec" | head -n 1)
    start=$(grep -b -o 'Once upon a time' "$OUT/killed.log" 2> /dev/null | tail -n 1 | cut -d: -f1)
    [ -n "$start" ] && [ "$(stat -c %s "$OUT/killed.log")" -gt $((start + 200)) ] && break
    sleep 0.1
done
kill -9 "$pid" 2>/dev/null
wait "$rec"
expect "record exits 128+9 when the workload is killed" "$?" 137
"$GGPROF" report "$db" > "$OUT/report.txt" 2>&1
expect "report reads the trace" "$?" 0
expect_ge "graphs up to the kill are stored" "$(q "$db" "SELECT count(*) FROM graphs")" 5
expect_ge "ops up to the kill are stored" "$(q "$db" "SELECT count(*) FROM records WHERE type = 0")" 100
expect "every stored split is whole" "$(q "$db" "SELECT count(*) FROM splits WHERE ticks_matched IS NOT 1")" 0
expect "the exit status is kept in the trace" "$(q "$db" "SELECT value FROM meta WHERE key = 'exit_status'")" 137
