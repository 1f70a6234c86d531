#!/usr/bin/env bash
# Benchmark (not a test): how much CPU `record` (the collector and its threads, task name "ggprof") takes inside the
# workload's timed generation, where on a machine with no CPU to spare each of its slices holds a ggml thread (one
# preempted, the other waiting at the next barrier). Runs llama-bench -p 0 -n TOKENS -r 3 -t 2 under
# `ggprof record --level op`, RUNS times, each under `perf sched record -k mono` (the scheduler's switches, on the
# clock the trace uses); the generation is from the second graph's start (the first is llama-bench's warm-up) to
# the last graph's end, from the trace's graphs table (sqlite3). For each run: record's time on a CPU inside that
# window, how many times it ran there, and the same for every other task but perf (the kernel's threads: kworker,
# kdamond, ...; whatever else the machine runs: what a plain run pays too), then the totals.
# usage: tests/bench/collector_in_gen.sh [RUNS]      (default 10; needs linux-perf and root, on an idle machine)
#        BASE_GGPROF=/old/build/bin/ggprof tests/bench/collector_in_gen.sh 10    another ggprof, run alternately
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
RUNS=${1:-10}
TOKENS=${TOKENS:-64}
command -v perf > /dev/null || { echo "collector_in_gen: needs perf (Debian's linux-perf)" >&2; exit 2; }
command -v sqlite3 > /dev/null || { echo "collector_in_gen: needs the sqlite3 shell" >&2; exit 2; }
make -C "$ROOT" -s all
eval "$(bash "$ROOT/tests/fixture.sh" | sed 's/^/export /')"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

one() { # $1 label, $2 ggprof: one recorded run; prints its line
    rm -f "$tmp/b.db" "$tmp/b.json.gz" "$tmp/sched.data"
    perf sched record -q -k mono -o "$tmp/sched.data" -- "$2" record -q --level op -o "$tmp/b.db" -- \
        "$LLAMA_BIN_DIR/llama-bench" -m "$GGUF_DENSE" -p 0 -n "$TOKENS" -r 3 -t 2 -o jsonl > /dev/null 2>&1
    local s e
    read -r s e < <(sqlite3 -separator ' ' "$tmp/b.db" \
        "SELECT min(start_ns), max(start_ns + duration_ns) FROM graphs WHERE graph_id > (SELECT min(graph_id) FROM graphs)")
    # timehist: one line per switch-out, its time, the task, and the run time (ms) that ended there; the part of each
    # run inside [s, e] counts
    perf sched timehist -i "$tmp/sched.data" 2> /dev/null | awk -v s="$s" -v e="$e" -v l="$1" '
        NR > 3 && NF >= 6 && $3 !~ /^<idle>/ && $3 !~ /^llama-bench/ {
            t = $1 * 1e9; r = $6 * 1e6; a = t - r; b = t
            if (a < s) a = s; if (b > e) b = e
            if (b <= a) next
            if ($3 ~ /^ggprof/) { c += b - a; nc++ } else if ($3 !~ /^(perf|:-1)/) { k += b - a; nk++ }
        }
        END { printf "%s generation %.0f ms: record on a CPU %.3f ms (%d times), other tasks %.3f ms (%d times)\n",
                     l, (e - s) / 1e6, c / 1e6, nc, k / 1e6, nk }'
}

GGPROF=$ROOT/build/bin/ggprof
for i in $(seq 1 "$RUNS"); do
    one this "$GGPROF"
    if [ -n "${BASE_GGPROF:-}" ]; then one base "$BASE_GGPROF"; fi
done | tee "$tmp/runs"
for l in this base; do
    grep -q "^$l " "$tmp/runs" || continue
    awk -v l="$l" '$1 == l { g += $3; c += $9; k += $15; n++; if ($9 > 0) with++ }
        END { printf "%s: %d runs, record on a CPU inside the generation in %d: %.3f ms a run on average (%.3f%% of the generation), other tasks %.3f ms\n",
                     l, n, with, c / n, 100 * c / g, k / n }' "$tmp/runs"
done
