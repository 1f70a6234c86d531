#!/usr/bin/env bash
# Benchmark (not a test): per-op time of the same generation on the fixture's shared llama.cpp and on its static LTO
# build (ggml inside the program, reached through patched entries and the backend's table), each recorded RUNS
# times, alternating; prints each op's median total per run on both sides and their ratio, for every op over 1% of
# the shared build's op time. Target: every such ratio within 5% of 1 (the two builds run the same ggml code; the
# static one is compiled with LTO, so some ops may really differ).
# usage: tests/bench/static_vs_shared.sh [RUNS] [TOKENS]   (default 5 runs of 64 tokens; run it on an idle machine)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
RUNS=${1:-5}
TOKENS=${2:-64}
make -C "$ROOT" -s all
eval "$(bash "$ROOT/tests/fixture.sh" | sed 's/^/export /')"
GGPROF=$ROOT/build/bin/ggprof
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$ROOT/tests/bench/stats.sh"

record() { # BUILD RUN BIN_DIR
    "$GGPROF" record -q -o "$tmp/$1-$2.db" -- "$3/llama-completion" -m "$GGUF_DENSE" -p "The quick brown fox" \
        -n "$TOKENS" -t 2 --no-warmup -no-cnv -s 1 > /dev/null 2>&1
    # per op (fused pairs under their label, as top-ops groups them): its total in ms, and the run's op total
    "$GGPROF" query "$tmp/$1-$2.db" "SELECT COALESCE(extra, name), sum(duration_ns) / 1e6 FROM records
        WHERE type = 0 GROUP BY 1" > "$tmp/$1-$2.ops"
}
for i in $(seq 1 "$RUNS"); do
    if [ $((i % 2)) = 1 ]; then record shared "$i" "$LLAMA_BIN_DIR"; record static "$i" "$STATIC_BIN_DIR"
    else record static "$i" "$STATIC_BIN_DIR"; record shared "$i" "$LLAMA_BIN_DIR"; fi
    echo "run $i of $RUNS" >&2
done

med() { # BUILD OP: the median of OP's per-run totals
    for i in $(seq 1 "$RUNS"); do awk -F'|' -v op="$2" '$1 == op { print $2; f = 1 } END { if (!f) print 0 }' "$tmp/$1-$i.ops"; done | median
}
total=$(for i in $(seq 1 "$RUNS"); do awk -F'|' '{ s += $2 } END { print s }' "$tmp/shared-$i.ops"; done | median)
printf 'llama-completion -n %s -t 2, dense model, %s runs of each build, medians of per-run totals\n' "$TOKENS" "$RUNS"
printf '%-22s %12s %12s %8s %7s\n' op shared_ms static_ms ratio share
worst=0
for op in $(cut -d'|' -f1 "$tmp"/shared-*.ops | sort -u); do
    s=$(med shared "$op")
    t=$(med static "$op")
    share=$(awk -v s="$s" -v t="$total" 'BEGIN { printf "%.1f", 100 * s / t }')
    awk -v s="$share" 'BEGIN { exit !(s >= 1) }' || continue
    ratio=$(awk -v a="$s" -v b="$t" 'BEGIN { printf "%.3f", b / a }')
    worst=$(awk -v w="$worst" -v r="$ratio" 'BEGIN { d = r > 1 ? r - 1 : 1 - r; print d > w ? d : w }')
    printf '%-22s %12.2f %12.2f %8s %6s%%\n' "$op" "$s" "$t" "$ratio" "$share"
done
awk -v w="$worst" 'BEGIN { printf "largest difference over ops above 1%%: %.1f%% (target <= 5%%)\n", 100 * w }'
