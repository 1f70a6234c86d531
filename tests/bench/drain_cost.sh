#!/usr/bin/env bash
# Benchmark (not a test): what the collector costs a long run while it runs. `record --level op` runs llama-bench
# (-n TOKENS, default 256: long enough that the pacer drains a slot inside the generation) RUNS times (default 9)
# each way, alternating: as shipped, and with GGPROF_RECORD_MAP=0 (the slots the workload's threads claim are not
# mapped by the collector ahead of its first drain: the A/B of that step). From each trace's meta (sqlite3) it reads
# what the collector did with the ring before the workload exited: the drains, the bytes they moved, their CPU time
# (the collector thread's clock around each) and the CPU time of mapping claimed slots (once a slot, while the
# workload starts). Prints each run and the medians, with the drains' CPU ms a MB: each ms of it taken inside the
# generation, on a machine with no CPU to spare, holds both ggml threads (one preempted, the other at the barrier).
# usage: tests/bench/drain_cost.sh [RUNS]      TOKENS=1024 tests/bench/drain_cost.sh 5    (on an idle machine)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
RUNS=${1:-9}
TOKENS=${TOKENS:-256}
make -C "$ROOT" -s all
[ -n "${LLAMA_BIN_DIR:-}" ] && [ -n "${GGUF_DENSE:-}" ] || eval "$(bash "$ROOT/tests/fixture.sh" | sed 's/^/export /')"
GGPROF=$ROOT/build/bin/ggprof
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$ROOT/tests/bench/stats.sh"
: > "$tmp/map"
: > "$tmp/nomap"
one() { # KIND [ENV...]: one recorded run, its row appended to $tmp/KIND
    local kind=$1
    shift
    env "$@" "$GGPROF" record -q --level op -o "$tmp/t.db" -- "$LLAMA_BIN_DIR/llama-bench" -m "$GGUF_DENSE" -p 0 \
        -n "$TOKENS" -t 2 -r 3 > /dev/null 2>&1
    local row
    row=$(sqlite3 "$tmp/t.db" "SELECT
        (SELECT value FROM meta WHERE key = 'collector_drains'),
        (SELECT value FROM meta WHERE key = 'collector_drained_bytes') / 1048576.0,
        (SELECT value FROM meta WHERE key = 'collector_drain_cpu_ns') / 1e6,
        (SELECT value FROM meta WHERE key = 'collector_map_cpu_ns') / 1e6" | tr '|' ' ')
    set -- $row
    [ -n "${4:-}" ] || { echo "drain_cost: the trace has no collector_* meta keys" >&2; exit 1; }
    local per
    per=$(awk -v mb="$2" -v ms="$3" 'BEGIN { printf "%.2f", (mb > 0 ? ms / mb : 0) }')
    printf '%-6s %d drains, %5.2f MB, %6.2f ms CPU (%s ms/MB); mapping slots %5.2f ms\n' "$kind" "$1" "$2" "$3" "$per" "$4"
    [ "$1" -gt 0 ] && echo "$2 $3 $per $4" >> "$tmp/$kind"
    return 0
}
for i in $(seq 1 "$RUNS"); do
    if [ $((i % 2)) = 1 ]; then one map; one nomap GGPROF_RECORD_MAP=0; else one nomap GGPROF_RECORD_MAP=0; one map; fi
done
col() { awk -v c="$2" '{ print $c }' "$tmp/$1" | median | xargs printf "%.2f"; }
echo "llama-bench -p 0 -n $TOKENS -r 3 -t 2 at --level op, medians of the runs that drained inside the run:"
for k in map nomap; do
    [ -s "$tmp/$k" ] || { echo "$k: no run drained before the workload ended (a longer TOKENS)"; continue; }
    echo "$k: drained $(col $k 1) MB in $(col $k 2) ms of CPU, $(col $k 3) ms a MB; mapping claimed slots $(col $k 4) ms"
done
