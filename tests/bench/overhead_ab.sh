#!/usr/bin/env bash
# Benchmark (not a test): the engine's own cost inside the graph compute, measured within one process.
# `ggprof record --alternate` records a fixed pseudo-random half of the graphs at LEVEL (default op) and the others
# at level graph only; llama-bench computes the same token graph one after the other, so two adjacent graphs of
# different kinds ran under the same machine state, which two separate processes (tests/bench/overhead.sh) never
# do on this VM. Prints, per run and over all runs, the median over such pairs of (graph-level graph time /
# LEVEL graph time) and of their difference. (A strict alternation would add whatever differs between even and
# odd graphs of a run: tens of µs either way, from one run to the next, here.)
# What it leaves out: work outside the graph compute (the collector, llama.cpp's own per-token work).
# usage: tests/bench/overhead_ab.sh [RUNS] [LEVEL]     (default 5 runs of llama-bench -p 0 -n 256 -r 3, level op)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
RUNS=${1:-5}
LEVEL=${2:-op}
make -C "$ROOT" -s all
eval "$(bash "$ROOT/tests/fixture.sh" | sed 's/^/export /')"
GGPROF=$ROOT/build/bin/ggprof
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

. "$ROOT/tests/bench/stats.sh"
: > "$tmp/all"
for r in $(seq 1 "$RUNS"); do
    "$GGPROF" record -q --alternate --level "$LEVEL" -o "$tmp/ab.db" -- "$LLAMA_BIN_DIR/llama-bench" -m "$GGUF_DENSE" \
        -p 0 -n 256 -t 2 -r 3 > /dev/null 2>&1
    alternate_pairs "$GGPROF" "$tmp/ab.db" > "$tmp/run"
    cat "$tmp/run" >> "$tmp/all"
    ratio=$(awk '{ print $1 / $2 }' "$tmp/run" | median)
    diff_us=$(awk '{ print ($2 - $1) / 1000 }' "$tmp/run" | median)
    awk -v r="$r" -v q="$ratio" -v d="$diff_us" -v n="$(wc -l < "$tmp/run")" 'BEGIN {
        printf "run %d: %d pairs of graphs, median ratio %.4f, median difference %.1f us\n", r, n, q, d }'
done
ratio=$(awk '{ print $1 / $2 }' "$tmp/all" | median)
diff_us=$(awk '{ print ($2 - $1) / 1000 }' "$tmp/all" | median)
ms=$(awk '{ print $1 / 1e6 }' "$tmp/all" | median)
awk -v q="$ratio" -v d="$diff_us" -v ms="$ms" -v l="$LEVEL" -v n="$(wc -l < "$tmp/all")" 'BEGIN {
    printf "all runs, %d pairs: graph time at level graph / at level %s: %.4f (median); the engine adds %.1f us to a %.2f ms graph\n", n, l, q, d, ms }'
