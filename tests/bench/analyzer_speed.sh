#!/usr/bin/env bash
# Benchmark (not a test): analyzer commands on a trace database of >= 1M records; prints the seconds each took.
# Target: report and top-ops <= 2 s. The trace is a real llama-completion recording whose events, graphs and
# splits are copied again and again (shifted in time and graph id) with INSERT ... SELECT.
# usage: tests/bench/analyzer_speed.sh [RECORDS] [BASE.db]   (default 1000000; BASE: recorded now)
# Set GGPROF_BUILD to use another build folder. Run it on an idle machine.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
N=${1:-1000000}
BASE=${2:-}
BUILD=${GGPROF_BUILD:-build}
make -C "$ROOT" -s BUILD="$BUILD" all
GGPROF=$ROOT/$BUILD/bin/ggprof
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
KEEP=${GGPROF_BENCH_KEEP:-}  # a path: where to leave the big trace

if [ -z "$BASE" ]; then
    eval "$(bash "$ROOT/tests/fixture.sh" | sed 's/^/export /')"
    BASE=$tmp/base.db
    "$GGPROF" record -q -o "$BASE" -- "$LLAMA_BIN_DIR/llama-completion" -m "$GGUF_DENSE" -p "The quick brown fox" \
        -n 64 -t 2 --no-warmup -no-cnv -s 1 > "$tmp/record.log" 2>&1
fi
cp "$BASE" "$tmp/big.db"
db=$tmp/big.db
q() { "$GGPROF" query "$db" "$1"; }

# Each round appends a copy of the graphs (all of them, or the first ones, enough to reach RECORDS), after the
# last graph in time and in graph id.
while [ "$(q "SELECT count(*) FROM events")" -lt "$N" ]; do
    q "CREATE TABLE shift AS SELECT COALESCE(max(graph_id), 0) + 1 AS g,
         max(start_ns + duration_ns) - min(start_ns) + 1000 AS t, $N - count(*) AS need FROM events;
       CREATE TABLE pick AS SELECT pid, graph_id FROM (SELECT pid, graph_id, sum(count(*)) OVER (ORDER BY graph_id, pid
         ROWS UNBOUNDED PRECEDING) - count(*) AS before FROM events WHERE graph_id IS NOT NULL GROUP BY pid, graph_id), shift
         WHERE before < need;
       INSERT INTO events(pid, tid, type, name, timing, backend_id, sched_id, graph_id, split_id, node_index, node_id,
         fused_index, fused_node_id, start_ns, duration_ns, bytes, wait_ns, extra) SELECT e.pid, tid, type, name, timing, backend_id, sched_id, e.graph_id + g, split_id,
         node_index, node_id, fused_index, fused_node_id, start_ns + t, duration_ns, bytes, wait_ns, extra
         FROM events e JOIN pick p ON p.pid = e.pid AND p.graph_id = e.graph_id, shift;
       INSERT INTO graph_list(pid, graph_id, sched_id, start_ns, duration_ns, n_nodes, n_splits) SELECT l.pid, l.graph_id + g, sched_id, start_ns + t, duration_ns, n_nodes, n_splits
         FROM graph_list l JOIN pick p ON p.pid = l.pid AND p.graph_id = l.graph_id, shift;
       INSERT INTO split_list(pid, graph_id, split_id, backend_id, sched_id, start_ns, duration_ns, n_nodes, node_start,
         ticks_matched, n_ticks, n_expected, engine_ns) SELECT l.pid, l.graph_id + g, split_id, backend_id, sched_id, start_ns + t, duration_ns,
         n_nodes, node_start, ticks_matched, n_ticks, n_expected, engine_ns
         FROM split_list l JOIN pick p ON p.pid = l.pid AND p.graph_id = l.graph_id, shift;
       DROP TABLE shift; DROP TABLE pick;"
done
if [ -n "$KEEP" ]; then cp "$db" "$KEEP"; fi
records=$(q "SELECT count(*) FROM events")
graphs=$(q "SELECT count(*) FROM graph_list")
echo "trace: $records records, $graphs graphs ($(du -m "$db" | cut -f1) MB), from $(basename "$BASE")"

timed() { # LABEL CMD...: prints the wall time of CMD (output discarded), fails if CMD fails
    local label=$1 t0 t1
    shift
    t0=$(date +%s.%N)
    "$@" > "$tmp/out.txt" 2> "$tmp/err.txt" || { echo "$label: failed: $(head -n 3 "$tmp/err.txt")" >&2; return 1; }
    t1=$(date +%s.%N)
    awk -v l="$label" -v a="$t0" -v b="$t1" 'BEGIN { printf "%-28s %6.2f s\n", l, b - a }'
}

timed "report" "$GGPROF" report "$db"
if "$GGPROF" help top-ops > /dev/null 2>&1; then timed "top-ops" "$GGPROF" top-ops "$db"; fi
timed "rollup --by layer" "$GGPROF" rollup "$db" --by layer
timed "rollup --by block" "$GGPROF" rollup "$db" --by block
timed "rollup --by phase" "$GGPROF" rollup "$db" --by phase
timed "rollup --by graph" "$GGPROF" rollup "$db" --by graph
timed "diff (the trace with itself)" "$GGPROF" diff "$db" "$db" --fail-above 10
echo "(target: report and top-ops <= 2 s)"
