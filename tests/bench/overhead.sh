#!/usr/bin/env bash
# Benchmark (not a test): token-generation speed of llama-bench plain and under 'ggprof record', alternating
# runs; prints the tokens/s ratio (profiled / plain) of each pair, their geometric mean with its 95% interval,
# and the medians. Target >= 0.99 at --level op.
# Pairs alternate which run goes first (plain first in odd pairs, profiled first in even ones): on this VM the
# first run after a pause is measurably slower or faster, and a fixed order would put that into the ratio.
# usage: tests/bench/overhead.sh [PAIRS] [LEVEL]     (default 61 pairs, level op; about 1.2 s per pair here)
#        RECORD_ARGS="--sample 100" tests/bench/overhead.sh 201   other record options (target there: >= 0.995)
#        RECORD_ARGS="--metrics 127.0.0.1:0" tests/bench/overhead.sh 201   with the live metrics (docs/metrics.md)
#        BENCH_BUILD=static tests/bench/overhead.sh 201   the static LTO build's llama-bench (ggml inside it)
#        BASE_GGPROF=/old/build/bin/ggprof tests/bench/overhead.sh 101   another ggprof recording in place of the
#                 plain runs: this ggprof's runs over that one's (a change's cost, both recording; target >= 1)
#        AA=1 tests/bench/overhead.sh 101   plain runs on both sides (an A/A test): how far apart two sets of plain
#                 processes come out on this machine, i.e. the smallest cost the same number of pairs can resolve
# Run it on an idle machine: ggml's spinning barriers make any concurrent build distort the numbers.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
PAIRS=${1:-61}
LEVEL=${2:-op}
TOKENS=${TOKENS:-64}
make -C "$ROOT" -s all
eval "$(bash "$ROOT/tests/fixture.sh" | sed 's/^/export /')"
GGPROF=$ROOT/build/bin/ggprof
BIN_DIR=$LLAMA_BIN_DIR
[ "${BENCH_BUILD:-shared}" = static ] && BIN_DIR=$STATIC_BIN_DIR
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

tps() { # prints llama-bench's average tokens/s of one run
    "$@" -m "$GGUF_DENSE" -p 0 -n "$TOKENS" -t 2 -r 3 -o jsonl 2> /dev/null | grep -o '"avg_ts": *[0-9.]*' | grep -o '[0-9.]*$'
}

plain=() prof=()
if [ -n "${BASE_GGPROF:-}" ]; then
    # shellcheck disable=SC2086
    run_plain() { plain+=("$(tps "$BASE_GGPROF" record -q --level "$LEVEL" ${RECORD_ARGS:-} -o "$tmp/base.db" -- "$BIN_DIR/llama-bench")"); }
else
    run_plain() { plain+=("$(tps "$BIN_DIR/llama-bench")"); }
fi
# shellcheck disable=SC2086 # RECORD_ARGS: options, split on spaces
if [ "${AA:-}" = 1 ]; then
    run_prof() { prof+=("$(tps "$BIN_DIR/llama-bench")"); }
else
    run_prof() { prof+=("$(tps "$GGPROF" record -q --level "$LEVEL" ${RECORD_ARGS:-} -o "$tmp/bench.db" -- "$BIN_DIR/llama-bench")"); }
fi
for i in $(seq 1 "$PAIRS"); do
    if [ $((i % 2)) = 1 ]; then run_plain; run_prof; else run_prof; run_plain; fi
    echo "pair $i: plain ${plain[-1]} t/s, profiled ${prof[-1]} t/s" >&2
done
. "$ROOT/tests/bench/stats.sh"
mp=$(printf '%s\n' "${plain[@]}" | median)
mr=$(printf '%s\n' "${prof[@]}" | median)
# Each pair ran within the same minute: the median of the pairs' own ratios is less sensitive to the machine's
# drift over the whole run than the ratio of the two medians.
ratios=()
for i in "${!plain[@]}"; do ratios+=("$(awk -v a="${plain[$i]}" -v b="${prof[$i]}" 'BEGIN { print b / a }')"); done
mq=$(printf '%s\n' "${ratios[@]}" | median)
quartiles=$(printf '%s\n' "${ratios[@]}" | sort -g | awk '{ v[NR] = $1 } END { printf "%.3f-%.3f", v[int((NR + 3) / 4)], v[int((3 * NR + 3) / 4)] }')
# Runs differ by a few % from one process to the next whatever the order: the pairs' ratios are the measure,
# and their mean (geometric: they are ratios) with its 95% interval says how far it can be trusted. The ratio of
# the two sides' medians ignores the pairing; it is printed last.
geoci=$(printf '%s\n' "${ratios[@]}" | geomean_ci)
records=0 dropped=0
if [ "${AA:-}" != 1 ]; then
    records=$("$GGPROF" query "$tmp/bench.db" "SELECT count(*) FROM records")
    dropped=$("$GGPROF" query "$tmp/bench.db" "SELECT value FROM meta WHERE key = 'dropped_records'")
fi
awk -v p="$mp" -v r="$mr" -v q="$mq" -v iq="$quartiles" -v mc="$geoci" -v n="$PAIRS" -v l="$LEVEL" -v rec="$records" -v drop="$dropped" -v tok="$TOKENS" -v base="${BASE_GGPROF:-}" -v aa="${AA:-}" -v b="${BENCH_BUILD:-shared}" -v ra="${RECORD_ARGS:+$RECORD_ARGS }" -v tg="$(case "${RECORD_ARGS:-}" in *--sample*) echo 0.995 ;; *) echo 0.99 ;; esac)" 'BEGIN {
    if (aa == 1) {
        printf "%s llama-bench -p 0 -n %d -r 3 -t 2, %d alternating pairs, plain on both sides\n", b, tok, n
        printf "A/A: the profiled side is plain llama-bench too: the ratios below are this machine\047s own spread between processes\n"
    } else printf "%s llama-bench -p 0 -n %d -r 3 -t 2, %d alternating pairs, --level %s %s(%d records per profiled run, %d dropped)\n", b, tok, n, l, ra, rec, drop
    if (base != "") printf "the plain side is %s recording (BASE_GGPROF): the ratios are this ggprof over it\n", base
    printf "tokens/s ratio, profiled / plain, geometric mean of the %d pairs: %s (95%% interval; target >= %s)\n", n, mc, tg
    printf "median of the per-pair ratios: %.3f (quartiles %s)\n", q, iq
    printf "median plain: %.2f t/s   median profiled: %.2f t/s   their ratio: %.3f\n", p, r, r / p }'
