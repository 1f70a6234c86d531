# Graphs of 4,000 tiny ops computed back to back (tests/e2e/ring_overload.c) on the default ring, the collector on
# the workload's one CPU (taskset -c 0): at nice 19 it gets little of it, and most of the records are lost. On two
# CPUs it now keeps up with this workload (a slot past half wakes it), which is no overload to test. The trace says exactly how many, and which graphs lost them, in records, never in messages;
# report and every ranking say what share of the graphs their figures cover.
. "$(dirname "$0")/../lib.sh"

build_ggml_program ring_overload
db="$OUT/overload.db"
rm -f "$db"
n_ops=4000
n_graphs=300
taskset -c 0 "$GGPROF" record -o "$db" -- "$OUT/ring_overload" $n_ops $n_graphs > "$OUT/out" 2> "$OUT/err"
expect "the workload succeeds" "$?" 0
expect "it computed graphs of $n_ops nodes" "$(cat "$OUT/out")" "nodes $n_ops graphs $n_graphs"
graphs=$(q "$db" "SELECT count(*) FROM graphs") # a graph's own row is not a record: it may be lost too
expect_ge "graphs are in the trace" "$graphs" 1
lost=$(q "$db" "SELECT COALESCE(sum(records), 0) FROM losses")
expect_ge "records were lost (the ring was overloaded)" "$lost" 1
expect "meta dropped_records is the records lost" "$(q "$db" "SELECT value FROM meta WHERE key = 'dropped_records'")" \
    "$lost"
expect_ge "losses are named by their graph" "$(q "$db" "SELECT count(DISTINCT graph_id) FROM losses")" 1
# A graph's ops go out in one CPU_OPS message (n_ops < 4096): kept or lost whole. Kept: n_ops OP records. Lost:
# its OP records and the SYNC records it carried (barrier waits, plan, join: their number varies with timing), so
# at least n_ops and at most 2 n_ops + 3 records, counted in records, not as one message.
expect "each graph's ops are all stored or all counted lost" "$(q "$db" "SELECT count(*) FROM graphs g WHERE NOT (
    ((SELECT count(*) FROM events e WHERE e.graph_id = g.graph_id AND e.type = 0) = $n_ops
     AND NOT EXISTS (SELECT 1 FROM losses l WHERE l.graph_id = g.graph_id))
    OR ((SELECT count(*) FROM events e WHERE e.graph_id = g.graph_id) = 0
     AND (SELECT sum(records) FROM losses l WHERE l.graph_id = g.graph_id) BETWEEN $n_ops AND 2 * $n_ops + 3))")" 0
expect_ge "some graphs kept their ops" "$(q "$db" "SELECT count(DISTINCT graph_id) FROM events WHERE type = 0")" 1
# Records no LOSS message named (a thread's table of pending losses full, or its last LOSS message lost) are one
# row without a graph: they belong to the graphs neither stored nor named, whole graphs' worth of records.
accounted=$(q "$db" "SELECT count(*) FROM (SELECT graph_id FROM events UNION SELECT graph_id FROM losses
    WHERE graph_id IS NOT NULL)")
unnamed=$(q "$db" "SELECT COALESCE(sum(records), 0) FROM losses WHERE graph_id IS NULL")
expect "records stored + records lost = records of $n_graphs graphs: OP records exactly, unnamed ones whole graphs" \
    "$([ "$accounted" -le $n_graphs ] && [ "$unnamed" -ge $(((n_graphs - accounted) * n_ops)) ] \
       && [ "$unnamed" -le $(((n_graphs - accounted) * (2 * n_ops + 3))) ] && echo yes)" yes
expect "stored OP records are whole graphs" "$(q "$db" "SELECT count(*) % $n_ops FROM events WHERE type = 0")" 0
hit=$(q "$db" "SELECT count(*) FROM (SELECT DISTINCT pid, graph_id FROM losses INTERSECT SELECT pid, graph_id FROM graphs)")
whole=$((graphs - hit))
line="op records for $whole of $graphs graphs ("
expect "record warns in records" "$(grep -c "warning: $lost records were dropped because the ring was full" "$OUT/err")" 1
"$GGPROF" report "$db" > "$OUT/report.txt"
expect "report: dropped records in records" "$(grep -c "dropped records: $lost\$" "$OUT/report.txt")" 1
expect "report: the coverage line" "$(grep -c "$line.*$hit graphs\{0,1\} lost records to a full ring ($lost records lost[,)]" \
    "$OUT/report.txt")" 1
expect "report: which graphs" "$(grep -c 'graphs that lost records (records lost): [0-9]' "$OUT/report.txt")" 1
for cmd in top-ops top-kernels inefficiency "rollup --by layer" "rollup --by phase"; do
    # shellcheck disable=SC2086
    "$GGPROF" $cmd "$db" > "$OUT/cmd.txt" 2>&1
    expect "$cmd: the coverage line" "$(grep -c "^$line" "$OUT/cmd.txt")" 1
    "$GGPROF" $cmd "$db" --format csv > "$OUT/cmd.csv" 2>&1
    expect "$cmd --format csv: a comment first" "$(head -1 "$OUT/cmd.csv" | grep -c "^# coverage: $line")" 1
    "$GGPROF" $cmd "$db" --format json > "$OUT/cmd.json" 2>&1
    expect "$cmd --format json: a field" "$(node -e 'const d = JSON.parse(require("fs").readFileSync(0, "utf8"));
        console.log(d.length > 0 && d.every(r => r.coverage.startsWith(process.argv[1])) ? "yes" : "no")' "$line" \
        < "$OUT/cmd.json")" yes
done
