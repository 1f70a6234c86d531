#!/usr/bin/env bash
# Benchmark (not a test): the rate of records the collector keeps up with while the workload runs. A workload
# (tests/bench/rate_workload.c) offers a steady rate of records for SECONDS, at rates doubling from 125k records/s,
# recorded on the default ring (or --ring-kib KIB); each line gives the rate offered, the rate the trace holds
# (records stored / workload seconds), the records dropped, record's finishing time (workload exit to record exit:
# what the builder thread, which stores and writes the JSON during the run, had left) and the load. Prints at the
# end the largest rate at which nothing was dropped, the largest at which the finish stayed under 1 s, and the
# collector's sustained rate: the records it stored a second at the first rate where it dropped (what it moved
# while the ring overflowed).
# usage: tests/bench/sustained_rate.sh [GGPROF [SECONDS [KIB]]]   (run it on an idle machine)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
GGPROF=$(realpath "${1:-$ROOT/build/bin/ggprof}")
SECONDS_RUN=${2:-3}
KIB=${3:-4096}
eval "$(bash "$ROOT/tests/fixture.sh" | sed 's/^/export /')"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cc -std=c11 -O1 -o "$tmp/rate_workload" "$ROOT/tests/bench/rate_workload.c" -I"$LLAMA_SRC_DIR/ggml/include" \
    -L"$LLAMA_BIN_DIR" -lggml-cpu -lggml -lggml-base -Wl,-rpath,"$LLAMA_BIN_DIR"
printf '%12s %12s %10s %10s %11s  %s\n' offered/s stored/s stored dropped finishing_s load
best=0 built=0 sustained=""
for rate in 125000 250000 500000 1000000 2000000 4000000 8000000 16000000; do
    rm -f "$tmp/r.db" "$tmp/r.json.gz"
    "$GGPROF" record -q -o "$tmp/r.db" --ring-kib "$KIB" -- \
        sh -c "'$tmp/rate_workload' 1000 $rate $SECONDS_RUN && date +%s.%N > '$tmp/exit'" > "$tmp/out" 2> "$tmp/err" ||
        { cat "$tmp/err" >&2; exit 1; }
    finish=$(echo "$(date +%s.%N) - $(cat "$tmp/exit")" | bc)
    secs=$(awk '{ print $4 }' "$tmp/out")
    stored=$(sqlite3 "$tmp/r.db" "SELECT count(*) FROM events")
    dropped=$(sqlite3 "$tmp/r.db" "SELECT value FROM meta WHERE key = 'dropped_records'")
    got=$(awk -v n="$stored" -v d="$dropped" -v s="$secs" 'BEGIN { printf "%.0f", (n + d) / s }')
    kept=$(awk -v n="$stored" -v s="$secs" 'BEGIN { printf "%.0f", n / s }')
    printf '%12s %12s %10s %10s %11.2f  %s\n' "$got" "$kept" "$stored" "$dropped" "$finish" \
        "$(uptime | sed 's/.*load average: //')"
    [ "$(echo "$finish < 1" | bc)" = 1 ] && [ "$dropped" = 0 ] && [ "$got" -gt "$built" ] && built=$got
    if [ "$dropped" = 0 ]; then
        [ "$got" -gt "$best" ] && best=$got
    elif [ -z "$sustained" ]; then
        sustained=$kept
    fi
    # the workload's own ceiling: it offered less than asked, a faster rate cannot be offered
    [ "$got" -lt $((rate / 2)) ] && break
done
echo "largest rate with nothing dropped: $best records/s (ring of 64 slots of $KIB KiB, ${SECONDS_RUN} s runs)"
echo "largest rate built during the run (finish under 1 s, nothing dropped): $built records/s"
echo "collector sustained rate while dropping: ${sustained:-not reached (the workload ceiling came first)} records/s"
