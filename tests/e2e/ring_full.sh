# A workload that outruns the collector: with a 4 KiB ring per thread, records are dropped, counted and
# reported, never silently lost; the trace stays readable and memory stays bounded.
. "$(dirname "$0")/../lib.sh"

db="$OUT/small-ring.db"
"$GGPROF" record --ring-kib 4 -o "$db" -- "$LLAMA_BIN_DIR/llama-completion" -m "$GGUF_DENSE" -p "Hello" -n 16 \
    -t 2 --no-warmup -no-cnv > "$OUT/log" 2>&1
expect "the workload still succeeds" "$?" 0
dropped=$(q "$db" "SELECT value FROM meta WHERE key = 'dropped_records'")
expect_ge "drops are counted in the trace" "$dropped" 1
expect "record warns about the drops" "$(grep -c "warning: $dropped records were dropped" "$OUT/log")" 1
"$GGPROF" report "$db" > "$OUT/report.txt"
expect "report reads the trace" "$?" 0
expect "report shows the drops" "$(grep -c "dropped records: $dropped\$" "$OUT/report.txt")" 1
