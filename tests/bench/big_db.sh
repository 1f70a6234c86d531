#!/usr/bin/env bash
# Helper of the benchmarks (not a test): a trace database of about RECORDS records, made of a real llama-completion
# recording's graphs copied (shifted in time and graph id) until it holds RECORDS records. analysis_speed.sh and
# compare_outputs.sh build their rows sets with it.
# usage: tests/bench/big_db.sh GGPROF OUT.db RECORDS
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
GGPROF=$1 db=$2 N=$3
eval "$(bash "$ROOT/tests/fixture.sh" | sed 's/^/export /')"
rm -f "$db"
"$GGPROF" record -q -o "$db" -- "$LLAMA_BIN_DIR/llama-completion" -m "$GGUF_DENSE" -p "The quick brown fox" \
    -n 64 -t 2 --no-warmup -no-cnv -s 1 > "$db.record.log" 2>&1
rm -f "$db.record.log" "${db%.db}.json.gz"
q() { sqlite3 "$db" "$1"; } # it writes: ggprof query opens a trace read-only
while [ "$(q "SELECT count(*) FROM events")" -lt "$N" ]; do
    q "CREATE TABLE shift AS SELECT COALESCE(max(graph_id), 0) + 1 AS g,
         max(start_ns + duration_ns) - min(start_ns) + 1000 AS t, $N - count(*) AS need FROM events;
       CREATE TABLE pick AS SELECT pid, graph_id FROM (SELECT pid, graph_id, sum(count(*)) OVER (ORDER BY graph_id, pid
         ROWS UNBOUNDED PRECEDING) - count(*) AS before FROM events WHERE graph_id IS NOT NULL GROUP BY pid, graph_id), shift
         WHERE before < need;
       INSERT INTO events(pid, tid, type, name, timing, backend_id, sched_id, graph_id, split_id, node_index, node_id,
         fused_index, fused_node_id, start_ns, duration_ns, bytes, wait_ns, extra) SELECT e.pid, tid, type, name, timing,
         backend_id, sched_id, e.graph_id + g, split_id, node_index, node_id, fused_index, fused_node_id, start_ns + t,
         duration_ns, bytes, wait_ns, extra FROM events e JOIN pick p ON p.pid = e.pid AND p.graph_id = e.graph_id, shift;
       INSERT INTO graph_list(pid, graph_id, sched_id, start_ns, duration_ns, n_nodes, n_splits) SELECT l.pid,
         l.graph_id + g, sched_id, start_ns + t, duration_ns, n_nodes, n_splits
         FROM graph_list l JOIN pick p ON p.pid = l.pid AND p.graph_id = l.graph_id, shift;
       INSERT INTO split_list(pid, graph_id, split_id, backend_id, sched_id, start_ns, duration_ns, n_nodes, node_start,
         ticks_matched, n_ticks, n_expected, engine_ns) SELECT l.pid, l.graph_id + g, split_id, backend_id, sched_id,
         start_ns + t, duration_ns, n_nodes, node_start, ticks_matched, n_ticks, n_expected, engine_ns
         FROM split_list l JOIN pick p ON p.pid = l.pid AND p.graph_id = l.graph_id, shift;
       DROP TABLE shift; DROP TABLE pick;"
done
