# Graphs of 2,000 tiny ops computed back to back (tests/e2e/ring_overload.c) on a 128 KiB ring: most of their
# records are lost. The trace says exactly how many, and which graphs lost them, in records, never in messages;
# report and every ranking say what share of the graphs their figures cover.
. "$(dirname "$0")/../lib.sh"

build_ggml_program ring_overload
db="$OUT/overload.db"
rm -f "$db"
n_ops=2000
n_graphs=200
"$GGPROF" record --ring-kib 128 -o "$db" -- "$OUT/ring_overload" $n_ops $n_graphs > "$OUT/out" 2> "$OUT/err"
expect "the workload succeeds" "$?" 0
expect "it computed graphs of $n_ops nodes" "$(cat "$OUT/out")" "nodes $n_ops graphs $n_graphs"
graphs=$(q "$db" "SELECT count(*) FROM graphs") # a graph's own row is not a record: it may be lost too (rarely)
expect_ge "the graphs are in the trace" "$graphs" $((n_graphs * 9 / 10))
lost=$(q "$db" "SELECT COALESCE(sum(records), 0) FROM losses")
expect_ge "records were lost (the ring was overloaded)" "$lost" 1
expect "meta dropped_records is the records lost" "$(q "$db" "SELECT value FROM meta WHERE key = 'dropped_records'")" \
    "$lost"
expect "every loss is named by its graph" "$(q "$db" "SELECT count(*) FROM losses WHERE graph_id IS NULL")" 0
# One thread, no barriers: a whole graph is n_ops OP records and the same few SYNC records (plan, join).
per_graph=$(q "$db" "SELECT DISTINCT count(*) FROM events WHERE graph_id NOT IN (SELECT graph_id FROM losses)
    GROUP BY graph_id")
expect "the graphs that lost nothing have the same records" "$(echo "$per_graph" | wc -l)" 1
expect "... $n_ops OP records and up to 3 syncs" "$([ "${per_graph:-0}" -ge $n_ops ] && [ "$per_graph" -le $((n_ops + 3)) ] \
    && echo yes)" yes
expect "records stored + records lost = records the engine produced, graph by graph" "$(q "$db" "SELECT count(*)
    FROM graphs g WHERE (SELECT count(*) FROM events e WHERE e.graph_id = g.graph_id)
    + COALESCE((SELECT sum(records) FROM losses l WHERE l.graph_id = g.graph_id), 0) != $per_graph")" 0
expect "... and in all" "$(q "$db" "SELECT (SELECT count(*) FROM events) + (SELECT sum(records) FROM losses)")" \
    $((per_graph * n_graphs))
hit=$(q "$db" "SELECT count(*) FROM (SELECT DISTINCT pid, graph_id FROM losses INTERSECT SELECT pid, graph_id FROM graphs)")
whole=$((graphs - hit))
line="op records for $whole of $graphs graphs ("
expect "record warns in records" "$(grep -c "warning: $lost records were dropped because the ring was full" "$OUT/err")" 1
"$GGPROF" report "$db" > "$OUT/report.txt"
expect "report: dropped records in records" "$(grep -c "dropped records: $lost\$" "$OUT/report.txt")" 1
expect "report: the coverage line" "$(grep -c "$line.*$hit graphs lost records to a full ring ($lost records lost); see --ring-kib" \
    "$OUT/report.txt")" 1
expect "report: which graphs" "$(grep -c 'graphs that lost records (records lost): [0-9]' "$OUT/report.txt")" 1
for cmd in top-ops top-kernels inefficiency "rollup --by graph" "rollup --by phase"; do
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
