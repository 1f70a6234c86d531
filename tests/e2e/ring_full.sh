# A workload that outruns the collector: with a 4 KiB ring per thread, records are dropped, counted and
# reported, never silently lost; the trace stays readable and memory stays bounded.
. "$(dirname "$0")/../lib.sh"

db="$OUT/small-ring.db"
"$GGPROF" record --ring-kib 4 -o "$db" -- "$LLAMA_BIN_DIR/llama-completion" -m "$GGUF_DENSE" -p "Hello" -n 16 \
    -t 2 --no-warmup -no-cnv > "$OUT/log" 2>&1
expect "the workload still succeeds" "$?" 0
# What a 4 KiB slot cannot take: records (a split's ops) or messages that carry none (descriptions, memory,
# placements), as the collector keeps up; both are counted, records in records, and said.
dropped=$(q "$db" "SELECT value FROM meta WHERE key = 'dropped_records'")
messages=$(q "$db" "SELECT value FROM meta WHERE key = 'dropped_messages'")
expect_ge "drops are counted in the trace (messages)" "$messages" 1
expect "record warns about the drops" "$(grep -c "warning: [0-9]* \(records\|messages without records\).* were dropped" "$OUT/log")" 1
# A split's ops are named by its plan (CPU_OPS_PLAN), which may be what did not fit: then its ops are dropped and
# counted with it, never stored unnamed (meta cpu_ops_unplanned counts those a reader had to leave out).
expect "no op record stored without its plan" "$(q "$db" "SELECT count(*) FROM meta WHERE key = 'cpu_ops_unplanned'")" 0
expect "every stored CPU op names its node" "$(q "$db" "SELECT count(*) FROM events WHERE type = 0 AND timing = 2 AND
    (node_id = 0 OR node_index < 0)")" 0
expect_ge "... and there are such ops" "$(q "$db" "SELECT count(*) FROM events WHERE type = 0 AND timing = 2")" 1
"$GGPROF" report "$db" > "$OUT/report.txt"
expect "report reads the trace" "$?" 0
expect "report shows the drops" "$(grep -c "dropped records: $dropped\$" "$OUT/report.txt"):$(grep -c "dropped messages: $messages " "$OUT/report.txt")" 1:1
