#!/usr/bin/env bash
# Benchmark, not a test: time to first paint of `ggprof export --html` for a trace of N records (default
# 1,000,000; target <= 3 s), in Debian's chromium. The big trace is a real llama-completion recording whose
# records, graphs and splits are repeated by SQL, each copy shifted after the previous one in time.
# usage: tests/bench/html_first_paint.sh [N]     (GGPROF_BUILD picks the build folder, as for tests/run.sh)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
GGPROF=$ROOT/${GGPROF_BUILD:-build}/bin/ggprof
N=${1:-1000000}
[ -x "$GGPROF" ] || { echo "bench: build ggprof first (make)" >&2; exit 1; }
while IFS='=' read -r k v; do [ -n "$k" ] && export "$k=$v"; done <<< "$(bash "$ROOT/tests/fixture.sh")"
nm_dir=$(bash "$ROOT/tests/browser/install.sh")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
q() { sqlite3 "$work/big.db" "$1"; } # it writes: ggprof query opens a trace read-only

"$GGPROF" record -q -o "$work/base.db" -- "$LLAMA_BIN_DIR/llama-completion" -m "$GGUF_DENSE" -p "The quick brown fox" \
    -n 32 -t 2 --no-warmup -no-cnv -s 1 > "$work/llama.log" 2>&1
cp "$work/base.db" "$work/big.db"
n0=$(q "SELECT count(*) FROM events")
span=$(q "SELECT max(start_ns + duration_ns) - min(start_ns) + 1000000 FROM events")
graphs=$(q "SELECT max(graph_id) + 1 FROM events")
reps=$(((N + n0 - 1) / n0 - 1))
k="(WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < $reps) SELECT i FROM k)"
q "INSERT INTO events SELECT pid, tid, type, name, timing, backend_id, sched_id, graph_id + i * $graphs, split_id,
   node_index, node_id, fused_index, fused_node_id, start_ns + i * $span, duration_ns, bytes, wait_ns, extra
   FROM events, $k WHERE events.rowid <= $n0" > /dev/null
q "DELETE FROM events WHERE rowid > $N" > /dev/null
q "INSERT INTO graph_list SELECT pid, graph_id + i * $graphs, sched_id, start_ns + i * $span, duration_ns, n_nodes,
   n_splits, batch_id FROM graph_list, $k WHERE graph_list.rowid <= (SELECT count(*) FROM graph_list)" > /dev/null
q "INSERT INTO split_list SELECT pid, graph_id + i * $graphs, split_id, backend_id, sched_id, start_ns + i * $span,
   duration_ns, n_nodes, node_start, ticks_matched, n_ticks, n_expected, engine_ns FROM split_list, $k
   WHERE split_list.rowid <= (SELECT count(*) FROM split_list)" > /dev/null
n=$(q "SELECT count(*) FROM records")

t0=$(date +%s.%N)
"$GGPROF" export "$work/big.db" --html "$work/big.html"
t1=$(date +%s.%N)
NODE_PATH="$nm_dir" node "$ROOT/tests/browser/viewer_check.js" "$work/big.html" "$work" --bench > "$work/paint.txt"
fp=$(sed -n 's/^first_paint_ms=//p' "$work/paint.txt")
printf 'records: %s (a %s-record llama-completion trace repeated)\n' "$n" "$n0"
printf 'export --html: %s s, %s MB\n' "$(awk "BEGIN { printf \"%.1f\", $t1 - $t0 }")" "$(($(stat -c %s "$work/big.html") / 1000000))"
printf 'first paint: %s ms (target <= 3000 ms); page loaded in %s ms; redraw of the whole trace: %s ms\n' "$fp" \
    "$(sed -n 's/^load_wall_ms=//p' "$work/paint.txt")" "$(sed -n 's/^redraw_all_ms=//p' "$work/paint.txt")"
