#!/usr/bin/env bash
# Benchmark (not a test): what each layer of ggprof costs a llama-bench process, against the plain program:
# the library preloaded without a recording, `record --level graph`, `record --level op`. Each round runs the
# four once, in an order that rotates from round to round; prints, per variant, the median and the geometric
# mean (with its 95% interval) of its tokens/s over the plain run of the same round. Separates what the process
# pays for the library and the collector (preload, graph) from what the per-op timing adds (op), which
# tests/bench/overhead_ab.sh measures inside one process.
# usage: tests/bench/levels.sh [ROUNDS]     (default 100; 3-5 s per round here; run it on an idle machine)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
ROUNDS=${1:-100}
make -C "$ROOT" -s all
eval "$(bash "$ROOT/tests/fixture.sh" | sed 's/^/export /')"
GGPROF=$ROOT/build/bin/ggprof
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

bench=("$LLAMA_BIN_DIR/llama-bench" -m "$GGUF_DENSE" -p 0 -n 64 -t 2 -r 3 -o jsonl)
tps() { "$@" 2> /dev/null | grep -o '"avg_ts": *[0-9.]*' | grep -o '[0-9.]*$'; }
run_plain() { tps "${bench[@]}"; }
run_preload() { LD_PRELOAD="$ROOT/build/lib/libggprof.so" tps "${bench[@]}"; }
run_graph() { tps "$GGPROF" record -q --level graph -o "$tmp/graph.db" -- "${bench[@]}"; }
run_op() { tps "$GGPROF" record -q --level op -o "$tmp/op.db" -- "${bench[@]}"; }

variants=(plain preload graph op)
for r in $(seq 1 "$ROUNDS"); do
    for j in 0 1 2 3; do
        v=${variants[$(((j + r) % 4))]}
        echo "$r $v $(run_$v)" >> "$tmp/runs"
    done
    echo "round $r done" >&2
done
. "$ROOT/tests/bench/stats.sh"
echo "llama-bench -p 0 -n 64 -r 3 -t 2, $ROUNDS rounds; tokens/s over the same round's plain run:"
for v in preload graph op; do
    awk -v v="$v" '{ t[$1 " " $2] = $3 } END { for (k in t) { split(k, a, " "); p = t[a[1] " plain"]
        if (a[2] == v && p > 0) print t[k] / p } }' "$tmp/runs" > "$tmp/ratios"
    printf "  %-8s median %.3f, geometric mean %s (95%%)\n" "$v" "$(median < "$tmp/ratios")" "$(geomean_ci < "$tmp/ratios")"
done
