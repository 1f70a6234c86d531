#!/usr/bin/env bash
# Benchmark (not a test): per-op time of the same generation on the fixture's shared llama.cpp and on its static LTO
# build (ggml inside the program, reached through patched entries and the backend's table), each recorded RUNS
# times, alternating; prints each op's share of its run's op time (median over the runs) on both sides and their
# ratio, for every op over 1% of the shared build's op time, and the median totals in ms. Shares, not totals, are
# compared: this VM's speed drifts by 10% between runs, which moves every op's total alike. Target: every ratio
# within 5% of 1 (the two builds run the same ggml code; the static one is compiled with LTO, so some ops may
# really differ).
# usage: tests/bench/static_vs_shared.sh [RUNS] [TOKENS]   (default 11 runs of 256 tokens, about 40 s; idle machine:
# with 64 tokens FLASH_ATTN_EXT, 2% of op time, moves by 15% from run to run here)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
RUNS=${1:-11}
TOKENS=${2:-256}
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

med() { # BUILD OP COLUMN: the median over the runs of OP's total (COLUMN 2, ms) or share of the run's op time (3, %)
    for i in $(seq 1 "$RUNS"); do
        awk -F'|' -v op="$2" -v c="$3" '{ v[$1] = $2; s += $2 } END { x = (op in v) ? v[op] : 0; print c == 2 ? x : 100 * x / s }' \
            "$tmp/$1-$i.ops"
    done | median
}
printf 'llama-completion -n %s -t 2, dense model, %s runs of each build alternating, medians over the runs\n' "$TOKENS" "$RUNS"
printf '%-22s %10s %10s %12s %12s %8s\n' op shared_ms static_ms shared_share static_share ratio
worst=0
for op in $(cut -d'|' -f1 "$tmp"/shared-*.ops | sort -u); do
    a=$(med shared "$op" 3)
    awk -v s="$a" 'BEGIN { exit !(s >= 1) }' || continue
    b=$(med static "$op" 3)
    ratio=$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.3f", b / a }')
    worst=$(awk -v w="$worst" -v r="$ratio" 'BEGIN { d = r > 1 ? r - 1 : 1 - r; print (d > w ? d : w) }')
    printf '%-22s %10.2f %10.2f %11.2f%% %11.2f%% %8s\n' "$op" "$(med shared "$op" 2)" "$(med static "$op" 2)" "$a" "$b" "$ratio"
done
awk -v w="$worst" 'BEGIN { printf "largest difference over ops above 1%%: %.1f%% (target <= 5%%)\n", 100 * w }'
