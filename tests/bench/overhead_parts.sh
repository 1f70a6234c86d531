#!/usr/bin/env bash
# Benchmark (not a test): where a recorded llama-bench run's extra time goes. Four kinds of run, in rotating rounds
# (each round runs every kind once, the order shifted by one each round):
#   plain    llama-bench alone
#   preload  libggprof.so preloaded, no recording (the engine's start-up, its wrappers idle)
#   graph    `ggprof record --level graph` (the engine outside graphs' detail, the collector, start-up and exit)
#   op       `ggprof record --level op` (what overhead.sh measures)
# Each run: its wall time from exec to exit, the time inside token generation (llama-bench's reps x tokens / its
# average tokens/s), the rest (load, warm-up, start-up and exit), the workload's CPU (user+sys, /usr/bin/time around
# it) and, for recorded runs, the collector's (record's own CPU: the process tree's task-clock from perf stat, less
# the workload's). Prints the medians per kind and the parts of op's extra time over plain:
#   engine inside graphs (op - graph generation time), graph level inside graphs (graph - preload), the rest
#   outside generation (start-up, load, exit: preload - plain, record - preload), and the collector's CPU, which on a
#   2-core machine competes with ggml's two threads.
# usage: tests/bench/overhead_parts.sh [ROUNDS]   (default 9; about 8 s a round here)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
ROUNDS=${1:-9}
TOKENS=${TOKENS:-64}
make -C "$ROOT" -s all
eval "$(bash "$ROOT/tests/fixture.sh" | sed 's/^/export /')"
. "$ROOT/tests/bench/stats.sh"
GGPROF=$ROOT/build/bin/ggprof
LIB=$ROOT/build/lib/libggprof.so
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "load: $(uptime | sed 's/.*load average: //')"
BENCH=("$LLAMA_BIN_DIR/llama-bench" -m "$GGUF_DENSE" -p 0 -n "$TOKENS" -t 2 -r 3 -o jsonl)
TIMED=(/usr/bin/time -f "cpu %U %S" -o "$tmp/time.out")

run() { # KIND: appends "wall gen rest workload_cpu collector_cpu" to $tmp/KIND
    local kind=$1 t0 t1
    rm -f "$tmp/r.db" "$tmp/r.json.gz" "$tmp/perf.out"
    t0=$(date +%s%N)
    case $kind in
        plain) "${TIMED[@]}" "${BENCH[@]}" > "$tmp/bench.out" 2> /dev/null ;;
        preload) LD_PRELOAD=$LIB "${TIMED[@]}" "${BENCH[@]}" > "$tmp/bench.out" 2> /dev/null ;;
        graph | op)
            perf stat -x, -e task-clock -o "$tmp/perf.out" "$GGPROF" record -q --level "$kind" -o "$tmp/r.db" -- \
                "${TIMED[@]}" "${BENCH[@]}" > "$tmp/bench.out" 2> /dev/null ;;
    esac
    t1=$(date +%s%N)
    local ts cpu tree
    ts=$(grep -o '"avg_ts": *[0-9.]*' "$tmp/bench.out" | grep -o '[0-9.]*$')
    cpu=$(awk '/^cpu/ { print $2 + $3 }' "$tmp/time.out")
    tree=$(awk -F, '/task-clock/ { print $1 }' "$tmp/perf.out" 2> /dev/null || true)
    awk -v w=$(((t1 - t0) / 1000)) -v ts="$ts" -v n="$TOKENS" -v cpu="$cpu" -v tree="${tree:-}" 'BEGIN {
        gen = 3 * n / ts * 1e6; coll = tree == "" ? 0 : tree * 1000 - cpu * 1e6
        printf "%d %d %d %d %d\n", w, gen, w - gen, cpu * 1e6, coll }' >> "$tmp/$kind"
}
kinds=(plain preload graph op)
for r in $(seq 1 "$ROUNDS"); do
    for k in 0 1 2 3; do run "${kinds[$(((k + r) % 4))]}"; done
    echo "round $r done" >&2
done
col() { awk -v c="$2" '{ print $c }' "$tmp/$1" | median; }
printf "%-8s %10s %10s %10s %12s %12s   (medians of %d runs, ms)\n" kind wall in-gen outside workload-cpu collector-cpu "$ROUNDS"
for k in "${kinds[@]}"; do
    printf "%-8s %10.1f %10.1f %10.1f %12.1f %12.1f\n" "$k" "$(col "$k" 1 | awk '{ print $1 / 1000 }')" \
        "$(col "$k" 2 | awk '{ print $1 / 1000 }')" "$(col "$k" 3 | awk '{ print $1 / 1000 }')" \
        "$(col "$k" 4 | awk '{ print $1 / 1000 }')" "$(col "$k" 5 | awk '{ print $1 / 1000 }')"
done
awk -v pg="$(col plain 2)" -v lg="$(col preload 2)" -v gg="$(col graph 2)" -v og="$(col op 2)" \
    -v po="$(col plain 3)" -v lo="$(col preload 3)" -v go="$(col graph 3)" -v oo="$(col op 3)" \
    -v pw="$(col plain 1)" -v ow="$(col op 1)" -v gc="$(col graph 5)" -v oc="$(col op 5)" 'BEGIN {
    printf "op over plain, wall: %+.1f ms\n", (ow - pw) / 1000
    printf "  inside generation: preload %+.1f, level graph %+.1f, level op %+.1f ms (of %.1f ms plain)\n", (lg - pg) / 1000, (gg - lg) / 1000, (og - gg) / 1000, pg / 1000
    printf "  outside generation (start-up, load, warm-up, exit): preload %+.1f, record graph %+.1f, op %+.1f ms\n", (lo - po) / 1000, (go - lo) / 1000, (oo - go) / 1000
    printf "  collector CPU: %.1f ms at level graph, %.1f ms at level op\n", gc / 1000, oc / 1000 }'
