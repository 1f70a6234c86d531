#!/usr/bin/env bash
# Benchmark (not a test): what each layer of ggprof costs a llama-bench process, against the plain program:
# the library preloaded without a recording, `record --level graph`, `record --level op`. Each round runs each
# variant once, in an order that rotates from round to round; prints, per variant, the median and the geometric
# mean (with its 95% interval) of its tokens/s over the plain run of the same round. Separates what the process
# pays for the library and the collector (preload, graph) from what the per-op timing adds (op), which
# tests/bench/overhead_ab.sh measures inside one process.
# VARIANTS="plain graph alt op" adds `record --alternate` (a pseudo-random half of the graphs at level op, the others
# at level graph): a cost paid per op-level graph puts it halfway between graph and op, a cost the process pays once
# at level op (the tick installed, the collector's share) puts it with op. `split` (record --level split) is there too,
# and `bare`: `record` running the workload without the library (env -u LD_PRELOAD), the collector's share alone.
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
run_split() { tps "$GGPROF" record -q --level split -o "$tmp/split.db" -- "${bench[@]}"; }
run_op() { tps "$GGPROF" record -q --level op -o "$tmp/op.db" -- "${bench[@]}"; }
run_alt() { tps "$GGPROF" record -q --level op --alternate -o "$tmp/alt.db" -- "${bench[@]}"; }
run_bare() { tps "$GGPROF" record -q --level op -o "$tmp/bare.db" -- env -u LD_PRELOAD "${bench[@]}"; }

read -r -a variants <<< "${VARIANTS:-plain preload graph op}"
for v in "${variants[@]}"; do
    declare -F "run_$v" > /dev/null || { echo "levels.sh: unknown variant '$v' in VARIANTS (plain preload graph split alt bare op)" >&2; exit 2; }
done
[ "${variants[0]}" = plain ] || { echo "levels.sh: VARIANTS must start with plain, the runs the others are divided by" >&2; exit 2; }
n=${#variants[@]}
for r in $(seq 1 "$ROUNDS"); do
    for j in $(seq 0 $((n - 1))); do
        v=${variants[$(((j + r) % n))]}
        echo "$r $v $(run_$v)" >> "$tmp/runs"
    done
    echo "round $r done" >&2
done
. "$ROOT/tests/bench/stats.sh"
echo "llama-bench -p 0 -n 64 -r 3 -t 2, $ROUNDS rounds; tokens/s over the same round's plain run:"
for v in "${variants[@]:1}"; do
    awk -v v="$v" '{ t[$1 " " $2] = $3 } END { for (k in t) { split(k, a, " "); p = t[a[1] " plain"]
        if (a[2] == v && p > 0) print t[k] / p } }' "$tmp/runs" > "$tmp/ratios"
    printf "  %-8s median %.3f, geometric mean %s (95%%)\n" "$v" "$(median < "$tmp/ratios")" "$(geomean_ci < "$tmp/ratios")"
done
